import { mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { MongoClient } from 'mongodb'
import { connect } from 'nats'
import t from 'tap'
import { LocalExecutor } from '../../api/executors/local-executor.js'
import { createLogger } from '../../api/logger.js'
import { startMongo } from '../harness/mongo.js'
import { startNats } from '../harness/nats.js'
import { scratchDir } from '../harness/scratch.js'

const HOUR = 3600_000

t.test("the local executor's start-up recovery keeps runs and work dirs from piling up", async (t) => {
  const [mongo, nats, dataDir] = await Promise.all([startMongo(t), startNats(t), scratchDir(t)])
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const db = client.db(mongo.dbName)
  const runs = db.collection<{ _id: string; command_id: string; attempt: number; boot_id: string; state: string; pid: number | null; work_dir: string; created_at: Date }>('runs')
  const now = new Date()
  const run = (id: string, state: string, ageMs: number) => ({
    _id: id, command_id: id, attempt: 1, boot_id: 'a-previous-boot', state, pid: null, work_dir: join(dataDir, 'work', `${id}-1`), created_at: new Date(now.getTime() - ageMs),
  })
  await runs.insertMany([run('cmd_old', 'finished', 25 * HOUR), run('cmd_recent', 'finished', HOUR), run('cmd_gone', 'queued', 2 * HOUR)])
  // The unfinished run's work dir, as a warm worker that died with its parent leaves it.
  await mkdir(join(dataDir, 'work', 'cmd_gone-1', 'outputs'), { recursive: true })

  const executor = new LocalExecutor({
    db, nats: nc, logger: createLogger('test', 'silent'), dataDir,
    runner: { natsUrl: nats.url, allowPrivateNetworks: false, s3: { endpoint: undefined, bucket: 'b', region: 'us-east-1', forcePathStyle: true }, ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', ytdlpPath: 'yt-dlp' },
    now: () => now,
  })
  await executor.recover()

  t.same((await runs.find({ state: 'finished' }).toArray()).map((r) => r._id).sort(), ['cmd_gone', 'cmd_recent'], 'a finished run older than a day is deleted; a recent one stays, the run-once guard')
  t.same(await readdir(join(dataDir, 'work')), [], "the interrupted run's work dir is removed (its command is unknown here, so it is not run again)")
})
