import t from 'tap'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { toolPath } from '../../api/local/tools.js'
import { startVersitygw } from '../../api/local/versitygw.js'
import { checkoutPath } from '../harness/checkout.js'
import { scratchDir } from '../harness/scratch.js'

// Our versitygw is its own small main (scripts/toolchain/versitygw/main.go): the posix
// backend only, and only the command line api/local/versitygw.ts passes.
const run = promisify(execFile)

/** Runs our versitygw with `args`: its exit code and output. */
async function versitygw(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(toolPath('versitygw'), args, { env: { PATH: process.env.PATH ?? '' } })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

t.test('versitygw --version names the version the wrapper module pins, as ffkube\'s build', async (t) => {
  const goMod = await readFile(checkoutPath('scripts/toolchain/versitygw/go.mod'), 'utf8')
  const pinned = /^require github\.com\/versity\/versitygw (v\S+)$/m.exec(goMod)?.[1]
  t.ok(pinned, 'go.mod requires versitygw at a version')
  const { code, stdout } = await versitygw(['--version'])
  t.equal(code, 0)
  t.match(stdout, new RegExp(`^Version  : ${pinned!.replaceAll('.', '\\.')}-ffkube$`, 'm'))
})

t.test('versitygw refuses a backend or a flag it does not serve instead of ignoring it', async (t) => {
  const dir = await scratchDir(t)
  const backend = await versitygw(['--port', '127.0.0.1:1', 'azure'])
  t.equal(backend.code, 2, 'another backend is a usage error')
  t.match(backend.stderr, /only command is posix/)
  const flag = await versitygw(['posix', '--sidecar', dir, dir])
  t.equal(flag.code, 2, 'a posix flag the build does not wire is a usage error')
  t.match(flag.stderr, /flag provided but not defined: -sidecar/)
})

t.test('a PUT to the managed store takes no lock file and gets an ETag from its checksum, not an MD5', async (t) => {
  const dataDir = await scratchDir(t, 'ffkube-s3-')
  const credentials = { accessKeyId: `test${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('hex') }
  const s3 = await startVersitygw(dataDir, credentials)
  t.teardown(() => s3.server.stop())
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials })
  t.teardown(() => client.destroy())
  await client.send(new CreateBucketCommand({ Bucket: 'flags' }))
  const body = randomBytes(64 * 1024)
  const put = await client.send(new PutObjectCommand({ Bucket: 'flags', Key: 'a/b.bin', Body: body }))

  const md5 = createHash('md5').update(body).digest('hex')
  t.ok(put.ETag, 'the PUT answered an ETag')
  t.not(put.ETag, `"${md5}"`, '--data-integrity-etag: the ETag is not the MD5 of the body')
  t.ok(put.ChecksumCRC32, 'the SDK sent a CRC32 the server checked')
  t.notOk((await readdir(dataDir)).includes('.vgwlocks'), '--disable-object-lock-file: no lock folder beside the buckets')
})
