import t from 'tap'
import type { StatusEvent } from '../../contracts/status-events.js'
import { RunnerReports, type Delivery } from '../../operator/runner-reports.js'

/** A JetStream delivery that remembers what became of it. */
function delivery(seq: number): Delivery & { outcome: 'pending' | 'ack' | 'nak' } {
  return {
    seq,
    outcome: 'pending',
    ack() {
      this.outcome = 'ack'
    },
    nak() {
      this.outcome = 'nak'
    },
  }
}
const progress = (progress: number): StatusEvent => ({
  command_id: 'c', event_id: `c:PROCESSING:RUNNING:${progress}`, emitted_at: '2026-11-24T12:00:00.000Z', type: 'PROCESSING', stage: 'RUNNING', progress,
})

t.test('an event is acknowledged when the write that includes it is settled, not before', async (t) => {
  const reports = new RunnerReports()
  const first = delivery(1)
  reports.add('ns/c', progress(10), first)
  const taken = reports.pending('ns/c')
  t.same(taken.map((r) => r.event.event_id), ['c:PROCESSING:RUNNING:10'])
  t.equal(first.outcome, 'pending', 'held while the write is under way')
  const later = delivery(2)
  reports.add('ns/c', progress(20), later)
  reports.settle('ns/c', taken)
  t.equal(first.outcome, 'ack')
  t.equal(later.outcome, 'pending', 'an event that came during the write waits for a write of its own')
  t.same(reports.pending('ns/c').map((r) => r.delivery.seq), [2])
  reports.settle('ns/c', reports.pending('ns/c'))
  t.equal(later.outcome, 'ack')
  t.same(reports.pending('ns/c'), [])
})

t.test('each key has its own events, in stream order', async (t) => {
  const reports = new RunnerReports()
  reports.add('ns/a', progress(30), delivery(5))
  reports.add('ns/b', progress(10), delivery(6))
  reports.add('ns/a', progress(40), delivery(7))
  t.same(reports.pending('ns/a').map((r) => r.delivery.seq), [5, 7])
  t.same(reports.pending('ns/b').map((r) => r.delivery.seq), [6])
  t.same(reports.pending('ns/none'), [])
})

t.test('a redelivered message replaces the copy held, and settling acknowledges its latest delivery', async (t) => {
  const reports = new RunnerReports()
  const old = delivery(3)
  reports.add('ns/c', progress(50), old)
  const taken = reports.pending('ns/c')
  // The ack wait ran out while the reconcile failed: JetStream delivers the same message again.
  const again = delivery(3)
  reports.add('ns/c', progress(50), again)
  t.equal(reports.pending('ns/c').length, 1, 'one event, not two')
  reports.settle('ns/c', taken)
  t.equal(again.outcome, 'ack')
  t.equal(old.outcome, 'pending', 'the superseded delivery is left alone')
  t.same(reports.pending('ns/c'), [])
})

t.test('releaseAll hands every unsettled event back for redelivery and forgets it', async (t) => {
  const reports = new RunnerReports()
  const a = delivery(1)
  const b = delivery(2)
  const settled = delivery(3)
  reports.add('ns/a', progress(10), a)
  reports.add('ns/b', progress(10), b)
  reports.add('ns/b', progress(20), settled)
  reports.settle('ns/b', reports.pending('ns/b').filter((r) => r.delivery.seq === 3))
  reports.releaseAll()
  t.same([a.outcome, b.outcome, settled.outcome], ['nak', 'nak', 'ack'])
  t.same(reports.pending('ns/a'), [])
  t.same(reports.pending('ns/b'), [])
})
