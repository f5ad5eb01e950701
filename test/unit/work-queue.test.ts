import t from 'tap'
import { exponentialDelay, jitteredDelay } from '../../operator/backoff.js'
import { WorkQueue, type Timers } from '../../operator/work-queue.js'

/** Timers driven by the test: nothing fires until advance(). */
class ManualTimers implements Timers {
  time = 0
  private next = 0
  private readonly pending = new Map<number, { at: number; fn: () => void }>()
  now(): number {
    return this.time
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.next
    this.pending.set(id, { at: this.time + ms, fn })
    return id
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number)
  }
  advance(ms: number): void {
    this.time += ms
    for (const [id, timer] of [...this.pending].sort((a, b) => a[1].at - b[1].at)) {
      if (timer.at <= this.time) {
        this.pending.delete(id)
        timer.fn()
      }
    }
  }
  get scheduled(): number[] {
    return [...this.pending.values()].map((p) => p.at - this.time)
  }
}

t.test('a key waiting once is not queued twice', async (t) => {
  const q = new WorkQueue({ timers: new ManualTimers() })
  q.add('ns/a')
  q.add('ns/b')
  q.add('ns/a')
  t.equal(q.length, 2)
  t.equal(await q.get(), 'ns/a')
  t.equal(await q.get(), 'ns/b')
})

t.test('a key being processed is not handed to a second worker; it comes back after done()', async (t) => {
  const q = new WorkQueue({ timers: new ManualTimers() })
  q.add('ns/a')
  const key = await q.get()
  q.add('ns/a')
  t.equal(q.length, 0, 'not queued while a worker holds it')
  let second: string | undefined
  const waiting = q.get().then((k) => (second = k))
  await Promise.resolve()
  t.equal(second, undefined, 'a second worker waits')
  q.done(key!)
  await waiting
  t.equal(second, 'ns/a', 'handed out again once the first worker is done')
})

t.test('failed keys come back after a per-key exponential delay, reset by forget()', async (t) => {
  const timers = new ManualTimers()
  const q = new WorkQueue({ timers, baseDelayMs: 10, maxDelayMs: 1000 })
  const delays: number[] = []
  for (let i = 0; i < 9; i++) {
    q.addRateLimited('ns/a')
    delays.push(timers.scheduled[0]!)
    timers.advance(timers.scheduled[0]!)
    q.done((await q.get())!)
  }
  t.same(delays, [10, 20, 40, 80, 160, 320, 640, 1000, 1000])
  t.equal(q.numRequeues('ns/a'), 9)
  q.addRateLimited('ns/b')
  t.same(timers.scheduled, [10], 'another key has its own count')
  q.forget('ns/a')
  q.addRateLimited('ns/a')
  t.same(timers.scheduled.sort((a, b) => a - b), [10, 10], 'forget starts the backoff over')
})

t.test('addAfter keeps the earliest pending delay of a key', async (t) => {
  const timers = new ManualTimers()
  const q = new WorkQueue({ timers })
  q.addAfter('ns/a', 500)
  q.addAfter('ns/a', 900)
  t.same(timers.scheduled, [500])
  q.addAfter('ns/a', 100)
  t.same(timers.scheduled, [100])
  timers.advance(99)
  t.equal(q.length, 0)
  timers.advance(1)
  t.equal(q.length, 1)
})

t.test('shutDown wakes waiting workers with undefined and drops delayed keys', async (t) => {
  const timers = new ManualTimers()
  const q = new WorkQueue({ timers })
  const waiting = q.get()
  q.addAfter('ns/a', 100)
  q.shutDown()
  t.equal(await waiting, undefined)
  t.same(timers.scheduled, [])
  q.add('ns/b')
  t.equal(await q.get(), undefined, 'adds after shutdown are ignored')
})

t.test('reports its depth as keys come and go', async (t) => {
  const depths: number[] = []
  const q = new WorkQueue({ timers: new ManualTimers(), onDepth: (d) => depths.push(d) })
  q.add('ns/a')
  q.add('ns/b')
  await q.get()
  t.same(depths, [1, 2, 1])
})

t.test('backoff schedules: exponential with a cap, jitter within [d/2, d]', async (t) => {
  t.equal(exponentialDelay(0, 100, 10_000), 0)
  t.equal(exponentialDelay(1, 100, 10_000), 100)
  t.equal(exponentialDelay(5, 100, 10_000), 1600)
  t.equal(exponentialDelay(2000, 100, 10_000), 10_000, 'no overflow past the cap')
  t.equal(jitteredDelay(3, 100, 10_000, () => 0), 200)
  t.equal(jitteredDelay(3, 100, 10_000, () => 1), 400)
  t.equal(jitteredDelay(3, 100, 10_000, () => 0.5), 300)
})
