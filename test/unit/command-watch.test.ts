import t from 'tap'
import { CommandWatch, type WatchTimers } from '../../api/commands/command-watch.js'
import type { CommandDocument } from '../../api/commands/command-document.js'
import { formatEvent, parseLastEventId } from '../../api/commands/event-stream.js'

/** Timers the test moves by hand: `tick()` fires every interval, `advance(ms)` passes time for one-shot timers. */
function manualTimers() {
  const loops = new Map<number, () => void>()
  const once = new Map<number, { at: number; fn: () => void }>()
  let next = 0
  let time = 0
  const timers: WatchTimers = {
    every: (_ms, fn) => {
      const id = next++
      loops.set(id, fn)
      return () => void loops.delete(id)
    },
    after: (ms, fn) => {
      const id = next++
      once.set(id, { at: time + ms, fn })
      return () => void once.delete(id)
    },
    now: () => time,
  }
  return {
    timers,
    loops,
    once,
    tick: () => [...loops.values()].forEach((fn) => fn()),
    advance: (ms: number) => {
      time += ms
      for (const [id, timer] of [...once]) {
        if (timer.at > time) continue
        once.delete(id)
        timer.fn()
      }
    },
  }
}

/** A change feed the test nudges by hand. */
function manualFeed() {
  const subscribers = new Map<string, (ended?: boolean) => void>()
  return {
    changes: (id: string, fn: (ended?: boolean) => void) => (subscribers.set(id, fn), () => void subscribers.delete(id)),
    subscribers,
    nudge: (id: string, ended = false) => subscribers.get(id)?.(ended),
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

t.test('one watch per command, shared by its listeners, stopped by the last to leave', async (t) => {
  const reads: string[] = []
  const clock = manualTimers()
  const feed = manualFeed()
  const watch = new CommandWatch({ read: async (id) => (reads.push(id), { _id: id } as CommandDocument), onError: () => undefined, changes: feed.changes, timers: clock.timers })
  const seen: string[] = []
  const leaveA = watch.watch('c1', (doc) => seen.push(`a:${doc?._id}`))
  const leaveB = watch.watch('c1', (doc) => seen.push(`b:${doc?._id}`))
  const leaveC = watch.watch('c2', (doc) => seen.push(`c:${doc?._id}`))
  t.equal(watch.watchedCommands, 2)
  clock.tick()
  await settle()
  t.same(reads.sort(), ['c1', 'c2'], 'one read per command, however many listen')
  t.same(seen.sort(), ['a:c1', 'b:c1', 'c:c2'])
  leaveA()
  t.equal(clock.loops.size, 2, 'c1 still has a listener')
  leaveB()
  leaveB()
  leaveC()
  t.equal(watch.watchedCommands, 0)
  t.equal(clock.loops.size, 0, 'no poll outlives its listeners')
  t.equal(feed.subscribers.size, 0, 'no subscription either')
})

t.test('a nudge reads at once, but never sooner than 250 ms after the last read', async (t) => {
  let reads = 0
  const clock = manualTimers()
  const feed = manualFeed()
  const watch = new CommandWatch({ read: async () => (reads++, null), onError: () => undefined, changes: feed.changes, timers: clock.timers })
  const leave = watch.watch('c1', () => undefined)
  feed.nudge('c1')
  await settle()
  t.equal(reads, 1, 'the first nudge reads now')
  clock.advance(100)
  feed.nudge('c1')
  feed.nudge('c1')
  await settle()
  t.equal(reads, 1, 'nudges within the spacing wait')
  clock.advance(149)
  await settle()
  t.equal(reads, 1)
  clock.advance(1)
  await settle()
  t.equal(reads, 2, 'and are one read when it has passed')
  leave()
  t.equal(clock.once.size, 0, 'a waiting read is cancelled with the watch')
})

t.test('the nudge of the end reads at once, even within the spacing, and only once', async (t) => {
  let reads = 0
  const clock = manualTimers()
  const feed = manualFeed()
  const watch = new CommandWatch({ read: async () => (reads++, null), onError: () => undefined, changes: feed.changes, timers: clock.timers })
  const leave = watch.watch('c1', () => undefined)
  feed.nudge('c1')
  await settle()
  t.equal(reads, 1)
  clock.advance(50)
  feed.nudge('c1')
  await settle()
  t.equal(reads, 1, 'an ordinary nudge waits for the spacing')
  feed.nudge('c1', true)
  await settle()
  t.equal(reads, 2, 'the end does not')
  t.equal(clock.once.size, 0, 'and the waiting read it overtook is dropped')
  leave()
})

/** A watch whose every read waits until the test releases it; counts the reads. */
function gatedWatch() {
  const gate = { reads: 0, release: (): void => undefined }
  const clock = manualTimers()
  const feed = manualFeed()
  const watch = new CommandWatch({
    read: async () => {
      gate.reads++
      await new Promise<void>((resolve) => (gate.release = resolve))
      return null
    },
    onError: () => undefined,
    changes: feed.changes,
    timers: clock.timers,
  })
  return { gate, clock, feed, watch }
}

t.test('the end nudged during a read is read right after it', async (t) => {
  const { gate, feed, watch } = gatedWatch()
  watch.watch('c1', () => undefined)
  feed.nudge('c1')
  feed.nudge('c1', true)
  t.equal(gate.reads, 1)
  gate.release()
  await settle()
  t.equal(gate.reads, 2, 'without waiting out the spacing')
  gate.release()
  watch.close()
})

t.test('a slow read is not overtaken, and a nudge during it is one more read after it', async (t) => {
  const { gate, clock, feed, watch } = gatedWatch()
  watch.watch('c1', () => undefined)
  clock.tick()
  clock.tick()
  feed.nudge('c1')
  t.equal(gate.reads, 1)
  clock.advance(300)
  gate.release()
  await settle()
  t.equal(gate.reads, 2, 'the nudge that came during the read')
  gate.release()
  watch.close()
})

t.test('Last-Event-ID is a revision, or nothing', async (t) => {
  const cases: Array<[string | undefined, number]> = [[undefined, -1], ['7', 7], [' 12 ', 12], ['abc', -1], ['-3', -1], ['1e3', -1], ['9'.repeat(20), -1]]
  for (const [header, expected] of cases) t.equal(parseLastEventId(header), expected, String(header))
  t.equal(formatEvent(3, '{"a":1}'), 'id: 3\ndata: {"a":1}\n\n')
})
