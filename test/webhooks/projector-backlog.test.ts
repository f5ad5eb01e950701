import t from 'tap'
import { JSONCodec } from 'nats'
import { createLogger } from '../../api/logger.js'
import { StatusProjector } from '../../api/projector/status-projector.js'
import { ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { failedEvent, statusEventId, statusSubject, type StatusEventBody } from '../../contracts/status-events.js'
import { startWorld, until } from './world.js'

const codec = JSONCodec()

t.test('a backlog of one command\'s progress events, met by a starting projector, ends in the latest stage with the highest progress, then the terminal state', async (t) => {
  const world = await startWorld(t)
  const { api_key } = await world.api.createAccount('free')
  const commandId = await world.submit(api_key)
  await ensureStream(world.nc, STATUS_STREAM_DEFINITION)
  const js = world.nc.jetstream()
  const bodies: StatusEventBody[] = [
    { type: 'PROCESSING', stage: 'FETCHING', progress: null },
    { type: 'PROCESSING', stage: 'RUNNING', progress: null },
    { type: 'PROCESSING', stage: 'RUNNING', progress: 10 },
    { type: 'PROCESSING', stage: 'RUNNING', progress: 55 },
    { type: 'PROCESSING', stage: 'RUNNING', progress: 90 },
    { type: 'PROCESSING', stage: 'PROBING', progress: null },
  ]
  // Published before the projector starts: it meets them as one backlog.
  for (const body of bodies) {
    const event = { ...body, command_id: commandId, event_id: statusEventId(commandId, body), emitted_at: new Date().toISOString() }
    await js.publish(statusSubject(commandId), codec.encode(event), { msgID: event.event_id })
  }
  const projector = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger: createLogger('test', 'silent') })
  await projector.start()
  t.teardown(() => projector.stop())
  const commands = world.api.db.collection<{ _id: string; status: string; progress: number | null; processing_stage: string | null }>('commands')
  const latest = await until('the last progress event applied', async () => {
    const doc = await commands.findOne({ _id: commandId })
    return doc?.processing_stage === 'PROBING' ? doc : null
  }, 20_000)
  t.match(latest, { status: 'PROCESSING', progress: 90, processing_stage: 'PROBING' }, 'the latest stage, and progress never went back')
  await publishStatusEvent(js, failedEvent({ commandId, errorStatus: 'FFMPEG_FAILED', errorMessage: 'exit status 1', at: new Date() }), { logger: createLogger('test', 'silent') })
  const done = await until('the terminal event', async () => {
    const doc = await commands.findOne({ _id: commandId })
    return doc?.status === 'FAILED' ? doc : null
  }, 20_000)
  t.match(done, { status: 'FAILED', progress: 90 })
})
