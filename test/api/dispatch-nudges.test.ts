import t from 'tap'
import { connect } from 'nats'
import { publishDispatchNudge, subscribeDispatchNudges } from '../../api/dispatcher/dispatch-nudges.js'
import { eventually } from '../harness/eventually.js'
import { startNats } from '../harness/nats.js'

t.test('an API process\'s nudge reaches a worker\'s dispatcher', async (t) => {
  const server = await startNats(t)
  const [api, worker] = await Promise.all([connect({ servers: server.url }), connect({ servers: server.url })])
  t.teardown(() => Promise.all([api.close(), worker.close()]))
  let seen = 0
  const subscription = subscribeDispatchNudges(worker, () => void (seen += 1))
  await worker.flush()
  publishDispatchNudge(api)
  await eventually('the nudge', () => seen === 1)
  t.equal(seen, 1)
  subscription.unsubscribe()
})

t.test('a nudge on a closed connection is dropped without an error: the dispatcher\'s poll still finds the work', async (t) => {
  const server = await startNats(t)
  const api = await connect({ servers: server.url })
  await api.close()
  t.doesNotThrow(() => publishDispatchNudge(api))
})
