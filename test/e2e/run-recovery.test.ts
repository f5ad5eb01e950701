import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { MongoClient } from 'mongodb'
import { connect, JSONCodec } from 'nats'
import t from 'tap'
import { failedEvent, STATUS_STREAM, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import type { CommandDraft } from '../../api/commands/drafts.js'
import { LocalExecutor } from '../../api/executors/local-executor.js'
import { createLogger } from '../../api/logger.js'
import { ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { startMongo } from '../harness/mongo.js'
import { startNats } from '../harness/nats.js'
import { scratchDir } from '../harness/scratch.js'

const DRAFT = {
  command_type: 'FFMPEG_COMMAND',
  input_files: {},
  output_files: { out_x: 'x.mp4' },
  ffmpeg_commands: ['ffmpeg -f lavfi -i testsrc {{out_x}}'],
  ytdlp: null,
  metadata: null,
  webhook_url: null,
  storage_destination_id: null,
  original_request: { input_files: {}, output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -f lavfi -i testsrc {{out_x}}' },
} satisfies CommandDraft

t.test("the local executor's start-up recovery ends what a previous start of the service left running", async (t) => {
  const [mongo, nats, dataDir] = await Promise.all([startMongo(t), startNats(t), scratchDir(t)])
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  await ensureStream(nc, STATUS_STREAM_DEFINITION)
  const db = client.db(mongo.dbName)
  const repository = new CommandRepository(db)
  await repository.ensureIndexes()
  const commands = db.collection<CommandDocument>('commands')
  const now = new Date()
  const workDir = (id: string, attempt: number) => join(dataDir, 'work', `${id}-${attempt}`)
  const record = (id: string, status: CommandDocument['status'], run: Partial<CommandDocument>) => ({ ...newCommandDocument(DRAFT, { commandId: id, accountId: 'acc_1' }, now), status, ...run })
  const previousBoot = (id: string, attempt: number) => ({ run_state: 'running' as const, run_attempt: attempt, run_boot_id: 'a-previous-boot', run_work_dir: workDir(id, attempt) })
  await repository.insert([
    // Its runner reported SUCCESS just before the service died.
    record('cmd_ended', 'SUCCESS', previousBoot('cmd_ended', 1)),
    // Interrupted on its second start already.
    record('cmd_twice', 'PROCESSING', previousBoot('cmd_twice', 2)),
    // Its runner reported FAILED just before the service died, and the projector had not applied it yet.
    record('cmd_reported', 'PROCESSING', previousBoot('cmd_reported', 1)),
  ])
  await publishStatusEvent(nc.jetstream(), failedEvent({ commandId: 'cmd_reported', errorStatus: 'FFMPEG_FAILED', errorMessage: 'exit status 1', at: now }), { logger: createLogger('test', 'silent') })
  // The work dirs, as warm workers that died with their parent leave them.
  await Promise.all([workDir('cmd_ended', 1), workDir('cmd_twice', 2), workDir('cmd_reported', 1)].map((dir) => mkdir(join(dir, 'outputs'), { recursive: true })))

  const executor = new LocalExecutor({
    commands: repository, nats: nc, logger: createLogger('test', 'silent'), dataDir,
    runner: { allowPrivateNetworks: false, s3: { endpoint: undefined, bucket: 'b', region: 'us-east-1', forcePathStyle: true }, ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', ytdlpPath: 'yt-dlp' },
    now: () => now,
  })
  await executor.recover()

  t.match(await commands.findOne({ _id: 'cmd_ended' }), { run_state: 'ended', run_attempt: 1 }, 'a run whose command ended is marked ended, not run again')
  t.match(await commands.findOne({ _id: 'cmd_twice' }), { run_state: 'ended', run_attempt: 2 }, 'a run interrupted twice is ended')
  t.match(
    await commands.findOne({ _id: 'cmd_reported' }),
    { status: 'PROCESSING', run_state: 'ended', run_attempt: 1, run_boot_id: 'a-previous-boot' },
    'a run whose end is in the stream, not yet on the record, is ended, not run again (the projector applies its end)',
  )
  const jsm = await nc.jetstreamManager()
  const failure = await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject('cmd_twice') })
  t.match(JSONCodec<StatusEvent>().decode(failure.data), { type: 'FAILED', command_id: 'cmd_twice', error_status: 'INTERRUPTED' }, 'and its command FAILED on its behalf')
  t.notOk(existsSync(workDir('cmd_ended', 1)) || existsSync(workDir('cmd_twice', 2)) || existsSync(workDir('cmd_reported', 1)), 'the interrupted runs\' work dirs are removed')
})
