import t from 'tap'
import { createLogger } from '../../api/logger.js'
import { StatusProjector } from '../../api/projector/status-projector.js'
import { failedEvent } from '../../contracts/status-events.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { startReceiver, startWorld, until } from './world.js'

t.test('a runner\'s FAILED event, through the real status projector, ends as one webhook equal to GET', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url, secret: 'through' })
  const projector = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger: createLogger('test', 'silent') })
  await projector.start()
  t.teardown(() => projector.stop())
  await world.deliverer()
  const commandId = await world.submit(api_key)
  await publishStatusEvent(world.nc.jetstream(), failedEvent({ commandId, errorStatus: 'FFMPEG_FAILED', errorMessage: 'exit status 1', at: new Date() }), { logger: createLogger('test', 'silent') })
  const got = await until('the webhook', () => receiver.received[0], 20_000)
  const poll = await world.poll(api_key, commandId)
  t.equal(JSON.parse(poll).status, 'FAILED')
  t.equal(got.body, `{"data":${poll},"timestamp":${world.time.now}}`)
  // A later command's webhook: one more for the first would have come before it.
  const later = await world.submit(api_key)
  await publishStatusEvent(world.nc.jetstream(), failedEvent({ commandId: later, errorStatus: 'FFMPEG_FAILED', errorMessage: 'exit status 1', at: new Date() }), { logger: createLogger('test', 'silent') })
  await until('the later command\'s webhook', () => receiver.received.find((r) => r.body.includes(later)), 20_000)
  t.equal(receiver.received.filter((r) => r.body.includes(commandId)).length, 1, 'one webhook for the command')
})
