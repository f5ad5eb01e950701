import t from 'tap'
import { CoalescingQueues } from '../../api/projector/coalescing-queues.js'

/** A promise the test resolves by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {}
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

/** Queues whose rounds wait at a gate before taking, recording what each took. */
function gatedQueues() {
  const rounds: { key: string; took: string[] | null; gate: ReturnType<typeof gate> }[] = []
  const errors: unknown[] = []
  const queues = new CoalescingQueues<string>(async (key, take) => {
    const round = { key, took: null as string[] | null, gate: gate() }
    rounds.push(round)
    await round.gate.promise
    round.took = take()
  }, (err) => errors.push(err))
  return { queues, rounds, errors }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

t.test('a lone item starts its round at once, without waiting for more', async (t) => {
  const { queues, rounds } = gatedQueues()
  queues.push('c1', 'a')
  t.equal(rounds.length, 1, 'the round began inside push()')
  rounds[0]!.gate.open()
  await queues.idle()
  t.same(rounds[0]!.took, ['a'])
  t.equal(queues.busy, 0)
})

t.test('items that arrive while a round is busy join it when it takes, or the next round', async (t) => {
  const { queues, rounds } = gatedQueues()
  queues.push('c1', 'a')
  queues.push('c1', 'b')
  queues.push('c1', 'c')
  t.equal(rounds.length, 1, 'one round at a time per key')
  rounds[0]!.gate.open()
  await tick()
  t.same(rounds[0]!.took, ['a', 'b', 'c'], 'taken together, in order')
  queues.push('c1', 'd')
  queues.push('c1', 'e')
  await tick()
  t.equal(rounds.length, 2)
  rounds[1]!.gate.open()
  await queues.idle()
  t.same(rounds[1]!.took, ['d', 'e'])
})

t.test('rounds of different keys run side by side', async (t) => {
  const { queues, rounds } = gatedQueues()
  queues.push('c1', 'a')
  queues.push('c2', 'x')
  queues.push('c1', 'b')
  t.same(rounds.map((r) => r.key), ['c1', 'c2'])
  rounds[1]!.gate.open()
  await tick()
  t.same(rounds[1]!.took, ['x'], 'c2 finished while c1 still waits')
  t.equal(rounds[0]!.took, null)
  rounds[0]!.gate.open()
  await queues.idle()
  t.same(rounds[0]!.took, ['a', 'b'])
})

t.test('a round that throws is reported and the key goes on with what arrives next', async (t) => {
  const errors: unknown[] = []
  const took: string[][] = []
  const queues = new CoalescingQueues<string>(async (_key, take) => {
    const items = take()
    took.push(items)
    if (items.includes('bad')) throw new Error('boom')
  }, (err) => errors.push(err))
  queues.push('c1', 'bad')
  queues.push('c1', 'good')
  await queues.idle()
  t.same(took, [['bad'], ['good']])
  t.equal(errors.length, 1)
  t.equal(queues.busy, 0)
})
