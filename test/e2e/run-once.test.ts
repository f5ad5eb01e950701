import { join } from 'node:path'
import { MongoClient } from 'mongodb'
import t from 'tap'
import type { QueueEntry } from '../../api/dispatcher/dispatch-queue.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

async function until(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

t.test('a command handed to the local executor again after its run ended is not run again', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const { command_id } = await api.post('/run-ffmpeg-command', {
    input_files: { in_v: media.url(clip) },
    output_files: { out_x: 'x.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}',
  })
  t.equal((await api.waitForCommand(command_id)).status, 'SUCCESS')

  const client = await MongoClient.connect(environment.env.MONGODB_URL as string)
  t.teardown(() => client.close())
  const db = client.db(environment.env.MONGODB_DATABASE as string)
  const runs = db.collection('runs')
  await until(async () => (await runs.countDocuments({ command_id, state: { $ne: 'finished' } })) === 0, 10_000, 'the run is finished')
  const before = await runs.find({ command_id }).toArray()
  t.match(before, [{ _id: command_id, state: 'finished', pid: null }], 'one run, finished; a pooled run records no pid')

  // What a crash between the hand-off and the entry's removal leaves; a later attempt, so no lease of the first one holds it.
  const queue = db.collection<QueueEntry>('dispatch_queue')
  await queue.insertOne({ _id: command_id, due_at: new Date(), attempts: 5, last_error: null, recovered: false })
  await until(async () => (await queue.countDocuments({ _id: command_id })) === 0, 10_000, 'the entry is handed off again')
  t.same(await runs.find({ command_id }).toArray(), before, 'the run document is the guard: no second run')
  t.match(await api.waitForCommand(command_id), { status: 'SUCCESS' })
})
