/**
 * S3's limit of 1,024 bytes on an object key, `{prefix}/{command_id}/{filename}`,
 * through HTTP with the service as `npm start` runs it (local executor): the API
 * refuses at submit a declared output that cannot fit, and the runner refuses a
 * folder output whose files' names only ffmpeg knew, before anything is stored.
 * The customer's bucket is versitygw, whose posix backend would store such a key
 * (ADR 0007): an empty bucket afterwards shows that the runner refused it.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { destinationFields, startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'

/** A prefix of `bytes` UTF-8 bytes, mostly two-byte characters, in segments a file system takes (at most 200 bytes). */
function wide(bytes: number): string {
  const segments: string[] = []
  let left = bytes
  for (; left > 201; left -= 201) segments.push('é'.repeat(100))
  return [...segments, 'a'.repeat(left)].join('/')
}

/** `{prefix}/{command_id}/` with a 900-byte prefix (500 characters): 938 bytes, leaving 86 for a filename. */
const PREFIX_BYTES = 900
const ROOM = 1024 - PREFIX_BYTES - 38

t.test('object keys over S3’s 1,024 bytes are refused before anything is stored', async (t) => {
  const dir = await scratchDir(t)
  const [environment, customer, clip] = await Promise.all([serviceEnvironment(t), startS3(t), makeClip(join(dir, 'clip.mp4'), { seconds: 3 })])
  const bucket = await customer.createBucket('customer-media')
  const customerS3 = customer.client()
  t.teardown(() => customerS3.destroy())
  const service = await startService(t, environment)
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  // Reached by a loopback host name (raw IP endpoints are always refused), allowed with ALLOW_PRIVATE_NETWORKS=1.
  const created = await api.request('POST', '/storage-destinations', { name: 'long-prefix', prefix: wide(PREFIX_BYTES), ...destinationFields(customer, bucket) })
  t.equal(created.status, 201, JSON.stringify(created.body))
  const destination: string = created.body.storage_destination_id
  const stored = async () => ((await customerS3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map((o) => o.Key)
  const transcode = (filename: string, extra: Record<string, unknown> = {}) => ({
    input_files: { in_video: media.url(clip) },
    output_files: { out_small: filename },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -t 1 -vf scale=160:-2 -c:v libx264 -preset ultrafast -an {{out_small}}',
    storage_destination_id: destination,
    ...extra,
  })
  const named = (bytes: number) => `${'n'.repeat(bytes - 4)}.mp4`

  t.test('run-ffmpeg-command answers 400 naming the output whose key cannot fit', async (t) => {
    const answer = await api.request('POST', '/run-ffmpeg-command', transcode(named(ROOM + 1)))
    t.equal(answer.status, 400)
    t.match(answer.body, {
      error: 'INVALID_REQUEST',
      message: /^output_files\.out_small: its object key would be 1025 bytes long and S3 allows at most 1024 \(the storage destination's prefix, the command id and this filename\)/,
    })
  })

  t.test('run-multiple-ffmpeg-commands answers 422 naming the command and the output', async (t) => {
    const answer = await api.request('POST', '/run-multiple-ffmpeg-commands', { commands: [transcode(named(ROOM)), transcode(named(ROOM + 1))] })
    t.equal(answer.status, 422)
    t.match(answer.body, { error: 'VALIDATION_ERROR', message: /^commands\[1\]\.output_files\.out_small: its object key would be 1025 bytes long/ })
  })

  t.test('an output whose key is exactly 1,024 bytes is stored', async (t) => {
    const accepted = await api.request('POST', '/run-ffmpeg-command', transcode(named(ROOM)))
    t.equal(accepted.status, 200, JSON.stringify(accepted.body))
    const done = await api.waitForCommand(accepted.body.command_id, 120_000)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    const key: string = done.output_files.out_small.external_object_key
    t.equal(Buffer.byteLength(key), 1024)
    t.ok((await stored()).includes(key), 'the customer finds it in its bucket')
  })

  // Segment names of 107 bytes (the policy allows 128): a key of 1,045 bytes under the destination, 152 under
  // managed storage's `outputs/`; the playlist's own key, 944 bytes, fits.
  const segments = `${'s'.repeat(100)}_%03d.ts`
  const hls = (extra: Record<string, unknown>) => ({
    input_files: { in_video: media.url(clip) },
    output_files: { out_hls: 'p.m3u8' },
    ffmpeg_command: `ffmpeg -i {{in_video}} -c:v libx264 -preset ultrafast -g 25 -an -f hls -hls_time 1 -hls_segment_filename ${segments} {{out_hls}}`,
    ...extra,
  })

  t.test('a folder output whose files ffmpeg named too long ends FAILED OUTPUT_KEY_TOO_LONG with nothing stored', async (t) => {
    const before = await stored()
    const accepted = await api.request('POST', '/run-ffmpeg-command', hls({ storage_destination_id: destination }))
    t.equal(accepted.status, 200, 'the playlist’s own key fits, so the API cannot tell yet')
    const done = await api.waitForCommand(accepted.body.command_id, 120_000)
    t.match(done, {
      status: 'FAILED',
      error_status: 'OUTPUT_KEY_TOO_LONG',
      error_message: /^out_hls: s{100}_\d{3}\.ts cannot be stored: its object key would be 1045 bytes long and S3 allows at most 1024; give it a shorter name$/,
    })
    t.same(await stored(), before, 'not one of its files reached the bucket, the playlist included')
  })

  t.test('the same command into managed storage, with its shorter prefix, succeeds', async (t) => {
    const accepted = await api.request('POST', '/run-ffmpeg-command', hls({}))
    t.equal(accepted.status, 200, JSON.stringify(accepted.body))
    const done = await api.waitForCommand(accepted.body.command_id, 120_000)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_hls.filename, 'p.m3u8')
  })
})
