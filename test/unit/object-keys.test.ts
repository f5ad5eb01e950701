/**
 * S3's 1,024-byte limit on `{prefix}/{command_id}/{filename}`: the pure rule,
 * the runner's check before it stores anything, and the API's at submit.
 */
import t from 'tap'
import { MAX_OBJECT_KEY_BYTES, objectKey, objectKeyProblem } from '../../contracts/object-keys.js'
import { checkOutputKeys, shortestName } from '../../api/commands/output-keys.js'
import { InvalidRequestError, ValidationError } from '../../api/errors/api-errors.js'
import { keysWithinLimit } from '../../runner-image/runner/upload/upload-phase.js'

const COMMAND_ID = '6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab'
/** A prefix of `bytes` UTF-8 bytes, mostly two-byte characters, in segments of at most 200 bytes. */
function wide(bytes: number): string {
  const segments: string[] = []
  let left = bytes
  for (; left > 201; left -= 201) segments.push('é'.repeat(100))
  return [...segments, 'a'.repeat(left)].join('/')
}

t.test('a key of exactly 1,024 bytes is allowed and one byte more is not, counted in UTF-8 bytes', async (t) => {
  const at = 'a'.repeat(MAX_OBJECT_KEY_BYTES)
  t.equal(objectKeyProblem(at), null)
  t.match(objectKeyProblem(`${at}b`), /1025 bytes long and S3 allows at most 1024/)
  t.match(objectKeyProblem('é'.repeat(513)), /1026 bytes/, '513 characters of two bytes')
  t.equal(objectKeyProblem('é'.repeat(512)), null)
})

t.test('the shortest name of a sequence pattern expands each sequence to its least width', async (t) => {
  t.equal(shortestName('seg_%03d.ts'), 'seg_000.ts')
  t.equal(shortestName('frame%d.png'), 'frame0.png')
  t.equal(shortestName('v%v_%5d.ts'), 'v0_00000.ts')
  t.equal(shortestName('100%%.mp4'), '100%.mp4')
  t.equal(shortestName('plain.mp4'), 'plain.mp4')
})

t.test('the runner refuses the first file whose key is too long, naming its output and name', async (t) => {
  const file = (alias: string, filename: string) => ({ alias, filename, path: `outputs/${filename}`, contentType: null })
  const prefix = wide(800)
  const fits = file('out_a', 'x'.repeat(1024 - 800 - 38))
  t.equal(Buffer.byteLength(objectKey(prefix, COMMAND_ID, fits.filename)), 1024)
  t.same(keysWithinLimit([fits], prefix, COMMAND_ID), [fits])
  const over = file('out_b', 'nested/y'.padEnd(1024 - 800 - 37, 'y'))
  t.throws(() => keysWithinLimit([fits, over], prefix, COMMAND_ID), {
    errorStatus: 'OUTPUT_KEY_TOO_LONG',
    message: /^out_b: nested\/y+ cannot be stored: its object key would be 1025 bytes long and S3 allows at most 1024; give it a shorter name$/,
  })
})

t.test('the API refuses a declared output whose key cannot fit, with the endpoint’s status and the field', async (t) => {
  const destination = { id: 'sd_0', endpointUrl: 'https://s3.example.com', region: 'auto', bucket: 'b', prefix: wide(800), pathStyle: false, publicBaseUrl: null }
  const name = (bytes: number) => 'n'.repeat(bytes - 3) + '.ts'
  t.doesNotThrow(() => checkOutputKeys({ out_a: name(1024 - 800 - 38) }, destination, 'output_files', InvalidRequestError))
  t.throws(() => checkOutputKeys({ out_a: 'a.mp4', out_b: name(1024 - 800 - 37) }, destination, 'commands[1].output_files', ValidationError), {
    statusCode: 422,
    message: /^commands\[1\]\.output_files\.out_b: its object key would be 1025 bytes long .*storage destination's prefix/,
  })
  t.throws(() => checkOutputKeys({ out_a: name(1024 - 800 - 37) }, destination, 'output_files', InvalidRequestError), { statusCode: 400, code: 'INVALID_REQUEST' })
  // A sequence is judged by its shortest name: %03d writes at least three digits, never fewer.
  const pattern = 'p'.repeat(1024 - 800 - 38 - 6) + '%03d.ts'
  t.equal(Buffer.byteLength(shortestName(pattern)), 1024 - 800 - 38)
  t.doesNotThrow(() => checkOutputKeys({ out_seq: pattern }, destination, 'output_files', InvalidRequestError))
  // Managed storage: `outputs/` and a filename of at most 255 bytes always fit.
  t.doesNotThrow(() => checkOutputKeys({ out_a: name(255) }, null, 'output_files', InvalidRequestError))
})
