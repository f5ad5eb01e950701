import t from 'tap'
import { AckPolicy, connect, JSONCodec } from 'nats'
import { startNats } from '../harness/nats.js'

t.test('publishes to and consumes from a JetStream stream', async (t) => {
  const nats = await startNats(t)
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const jsm = await nc.jetstreamManager()
  const stream = `SMOKE_${process.pid}_${Date.now()}`
  await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] })
  t.teardown(() => jsm.streams.delete(stream))

  const codec = JSONCodec<{ command_id: string; status: string }>()
  const js = nc.jetstream()
  const first = await js.publish(`${stream}.status`, codec.encode({ command_id: 'x', status: 'SUCCESS' }), { msgID: 'x-1' })
  const duplicate = await js.publish(`${stream}.status`, codec.encode({ command_id: 'x', status: 'SUCCESS' }), { msgID: 'x-1' })
  t.notOk(first.duplicate)
  t.ok(duplicate.duplicate, 'the same msgID is de-duplicated by the server')

  await jsm.consumers.add(stream, { durable_name: 'projector', ack_policy: AckPolicy.Explicit })
  const consumer = await js.consumers.get(stream, 'projector')
  const message = await consumer.next({ expires: 5_000 })
  t.ok(message, 'a message arrived')
  t.same(codec.decode(message!.data), { command_id: 'x', status: 'SUCCESS' })
  message!.ack()
  const info = await jsm.streams.info(stream)
  t.equal(info.state.messages, 1, 'the stream holds exactly one message')
})
