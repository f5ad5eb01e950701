import { randomBytes } from 'node:crypto'
import t from 'tap'
import { startVersitygw, startVersitygwOn, type LocalS3, type S3RootCredentials } from '../../api/local/versitygw.js'
import { startMinio, startMinioOn } from '../harness/minio.js'
import { scratchDir } from '../harness/scratch.js'

const credentials = () => ({ accessKeyId: `test${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('hex') })

interface S3Starter {
  name: string
  start(dataDir: string, credentials: S3RootCredentials): Promise<LocalS3>
  startOn(port: number, dataDir: string, credentials: S3RootCredentials): Promise<LocalS3>
}

// versitygw is the managed store; MinIO plays a customer's server in the tests (harness/minio.ts).
const starters: S3Starter[] = [
  { name: 'versitygw', start: startVersitygw, startOn: startVersitygwOn },
  { name: 'minio', start: startMinio, startOn: startMinioOn },
]

// The race freePort leaves (api/local/ports.ts): another process takes the port before the new server binds it.
for (const { name, start, startOn } of starters) {
  t.test(`a ${name} started on a port another ${name} holds fails to start, instead of handing out the other one`, async (t) => {
    const holder = await start(await scratchDir(t, 'ffkube-s3-'), credentials())
    t.teardown(() => holder.server.stop())
    const port = Number(new URL(holder.endpoint).port)
    const late = startOn(port, await scratchDir(t, 'ffkube-s3-'), credentials())
    await t.rejects(late, new RegExp(`^${name} exited before it was ready`), 'its failed bind is seen, so startOnFreePort tries another port')
    t.notOk(holder.server.hasExited, 'the server that holds the port is left alone')
  })
}
