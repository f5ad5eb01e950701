import t from 'tap'
import { CommandWatch, type Every } from '../../api/commands/command-watch.js'
import type { CommandDocument } from '../../api/commands/command-document.js'
import { formatEvent, parseLastEventId } from '../../api/commands/event-stream.js'

/** Intervals the test ticks by hand. */
function manualEvery() {
  const loops = new Map<number, () => void>()
  let next = 0
  const every: Every = (_ms, fn) => {
    const id = next++
    loops.set(id, fn)
    return () => void loops.delete(id)
  }
  return { every, loops, tick: () => [...loops.values()].forEach((fn) => fn()) }
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

t.test('one read loop per command, shared by its listeners, stopped by the last to leave', async (t) => {
  const reads: string[] = []
  const timers = manualEvery()
  const watch = new CommandWatch(async (id) => {
    reads.push(id)
    return { _id: id } as CommandDocument
  }, () => undefined, 250, timers.every)
  const seen: string[] = []
  const leaveA = watch.watch('c1', (doc) => seen.push(`a:${doc?._id}`))
  const leaveB = watch.watch('c1', (doc) => seen.push(`b:${doc?._id}`))
  const leaveC = watch.watch('c2', (doc) => seen.push(`c:${doc?._id}`))
  t.equal(watch.watchedCommands, 2)
  timers.tick()
  await settle()
  t.same(reads.sort(), ['c1', 'c2'], 'one read per command, however many listen')
  t.same(seen.sort(), ['a:c1', 'b:c1', 'c:c2'])
  leaveA()
  t.equal(timers.loops.size, 2, 'c1 still has a listener')
  leaveB()
  leaveB()
  leaveC()
  t.equal(watch.watchedCommands, 0)
  t.equal(timers.loops.size, 0, 'no loop outlives its listeners')
})

t.test('a slow read is not overtaken by the next tick', async (t) => {
  let release: () => void = () => undefined
  let reads = 0
  const timers = manualEvery()
  const watch = new CommandWatch(async () => {
    reads++
    await new Promise<void>((resolve) => (release = resolve))
    return null
  }, () => undefined, 250, timers.every)
  watch.watch('c1', () => undefined)
  timers.tick()
  timers.tick()
  t.equal(reads, 1)
  release()
  await settle()
  timers.tick()
  t.equal(reads, 2)
  watch.close()
})

t.test('Last-Event-ID is a revision, or nothing', async (t) => {
  const cases: Array<[string | undefined, number]> = [[undefined, -1], ['7', 7], [' 12 ', 12], ['abc', -1], ['-3', -1], ['1e3', -1], ['9'.repeat(20), -1]]
  for (const [header, expected] of cases) t.equal(parseLastEventId(header), expected, String(header))
  t.equal(formatEvent(3, '{"a":1}'), 'id: 3\ndata: {"a":1}\n\n')
})
