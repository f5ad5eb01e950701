import { randomBytes } from 'node:crypto'
import t from 'tap'
import { startVersitygw, startVersitygwOn } from '../../api/local/versitygw.js'
import { scratchDir } from '../harness/scratch.js'

const credentials = () => ({ accessKeyId: `test${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('hex') })

// The race freePort leaves (api/local/ports.ts): another process takes the port before the new server binds it.
t.test('a versitygw started on a port another versitygw holds fails to start, instead of handing out the other one', async (t) => {
  const holder = await startVersitygw(await scratchDir(t, 'ffkube-s3-'), credentials())
  t.teardown(() => holder.server.stop())
  const port = Number(new URL(holder.endpoint).port)
  const late = startVersitygwOn(port, await scratchDir(t, 'ffkube-s3-'), credentials())
  await t.rejects(late, /versitygw exited before it was ready/, 'its failed bind is seen, so startOnFreePort tries another port')
  t.notOk(holder.server.hasExited, 'the server that holds the port is left alone')
})
