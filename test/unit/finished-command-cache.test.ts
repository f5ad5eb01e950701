import t from 'tap'
import { DELETABLE_ENTRY_TTL_MS, FinishedCommandCache } from '../../api/commands/finished-command-cache.js'
import type { CommandPollResponse, OutputFileMeta } from '../../api/commands/schemas.js'

function command(id: string, status: CommandPollResponse['status'], outputs?: Record<string, Partial<OutputFileMeta>>): CommandPollResponse {
  return {
    command_id: id,
    status,
    command_type: 'FFMPEG_COMMAND',
    total_processing_seconds: null,
    ffmpeg_command_run_seconds: null,
    metadata: null,
    error_status: null,
    error_message: null,
    original_request: { input_files: {}, output_files: {} },
    progress: null,
    processing_stage: null,
    ...(outputs ? { output_files: outputs as Record<string, OutputFileMeta> } : {}),
  }
}

/** A store the test edits, counting its reads; after `holdNext()` the next read sees the store, then waits for the returned release. */
function store(initial: CommandPollResponse) {
  let held: Promise<void> | undefined
  const s = {
    record: initial,
    reads: 0,
    holdNext(): () => void {
      let release!: () => void
      held = new Promise<void>((resolve) => (release = resolve))
      return release
    },
    load: async (): Promise<CommandPollResponse | null> => {
      s.reads += 1
      const seen = s.record
      const wait = held
      held = undefined
      if (wait) await wait
      return seen
    },
  }
  return s
}

const managed = (isDeleted: boolean) => ({ out_a: { storage_location: 'INTERNAL' as const, is_deleted: isDeleted } })

t.test('a finished command is read once; a running one on every read', async (t) => {
  const cache = new FinishedCommandCache({ now: () => new Date(0) })
  const running = store(command('cmd_1', 'PROCESSING'))
  for (let i = 0; i < 3; i++) await cache.read('acc_1', 'cmd_1', running.load)
  t.equal(running.reads, 3)
  running.record = command('cmd_1', 'FAILED')
  for (let i = 0; i < 3; i++) t.equal((await cache.read('acc_1', 'cmd_1', running.load))?.status, 'FAILED')
  t.equal(running.reads, 4, 'read once more, when it had ended')
})

t.test('an entry is the account\'s: another account reads the store', async (t) => {
  const cache = new FinishedCommandCache({ now: () => new Date(0) })
  const finished = store(command('cmd_1', 'FAILED'))
  await cache.read('acc_1', 'cmd_1', finished.load)
  const none = async () => null
  t.equal(await cache.read('acc_2', 'cmd_1', none), null, 'the other account gets what its own read says')
  t.equal((await cache.read('acc_1', 'cmd_1', finished.load))?.command_id, 'cmd_1')
  t.equal(finished.reads, 1)
})

t.test('a deletable answer lives DELETABLE_ENTRY_TTL_MS without news; a settled one stays', async (t) => {
  let time = 0
  const cache = new FinishedCommandCache({ now: () => new Date(time) })
  const deletable = store(command('cmd_1', 'SUCCESS', managed(false)))
  const settled = store(command('cmd_2', 'SUCCESS', { out_a: { storage_location: 'EXTERNAL', is_deleted: false }, out_b: { storage_location: 'INTERNAL', is_deleted: true } }))
  await cache.read('acc_1', 'cmd_1', deletable.load)
  await cache.read('acc_1', 'cmd_2', settled.load)
  time = DELETABLE_ENTRY_TTL_MS - 1
  await cache.read('acc_1', 'cmd_1', deletable.load)
  t.equal(deletable.reads, 1)
  time = DELETABLE_ENTRY_TTL_MS
  await cache.read('acc_1', 'cmd_1', deletable.load)
  await cache.read('acc_1', 'cmd_2', settled.load)
  t.equal(deletable.reads, 2, 'read again once it lived its lifetime')
  t.equal(settled.reads, 1, 'nothing can change an external or deleted output')
})

t.test('an announced change drops the entry; a read that overlapped it is not kept', async (t) => {
  const cache = new FinishedCommandCache({ now: () => new Date(0) })
  const s = store(command('cmd_1', 'SUCCESS', managed(false)))
  await cache.read('acc_1', 'cmd_1', s.load)
  cache.changed({ kind: 'command', command_id: 'cmd_other' })
  cache.changed({ kind: 'account', account_id: 'acc_1' })
  await cache.read('acc_1', 'cmd_1', s.load)
  t.equal(s.reads, 1, 'changes to others leave it cached')
  cache.changed({ kind: 'command', command_id: 'cmd_1' })
  // A read that sees the output live, then the deletion's announcement before the read returns.
  const release = s.holdNext()
  const overlapping = cache.read('acc_1', 'cmd_1', s.load)
  s.record = command('cmd_1', 'SUCCESS', managed(true))
  cache.changed({ kind: 'command', command_id: 'cmd_1' })
  release()
  t.equal((await overlapping)?.output_files?.out_a?.is_deleted, false, 'the overlapping read answers what it saw')
  t.equal((await cache.read('acc_1', 'cmd_1', s.load))?.output_files?.out_a?.is_deleted, true, 'but the next reads the store again')
  t.equal(s.reads, 3)
})

t.test('while the feed is lost, only answers nothing can change are kept', async (t) => {
  const cache = new FinishedCommandCache({ now: () => new Date(0) })
  const deletable = store(command('cmd_1', 'SUCCESS', managed(false)))
  const failed = store(command('cmd_2', 'FAILED'))
  await cache.read('acc_1', 'cmd_1', deletable.load)
  await cache.read('acc_1', 'cmd_2', failed.load)
  cache.feedLost()
  for (let i = 0; i < 2; i++) {
    await cache.read('acc_1', 'cmd_1', deletable.load)
    await cache.read('acc_1', 'cmd_2', failed.load)
  }
  t.equal(deletable.reads, 3, 'the deletable answer dropped and not kept again')
  t.equal(failed.reads, 1, 'the FAILED one kept')
  cache.feedRestored()
  for (let i = 0; i < 2; i++) await cache.read('acc_1', 'cmd_1', deletable.load)
  t.equal(deletable.reads, 4, 'kept again once the feed is back')
})

t.test('past its bytes the least recently read answer goes first', async (t) => {
  const one = command('cmd_1', 'FAILED')
  const size = JSON.stringify(one).length
  const cache = new FinishedCommandCache({ now: () => new Date(0), maxBytes: size * 2 + 1 })
  const stores = ['cmd_1', 'cmd_2', 'cmd_3'].map((id) => store(command(id, 'FAILED')))
  const read = (i: number) => cache.read('acc_1', `cmd_${i + 1}`, stores[i]!.load)
  await read(0)
  await read(1)
  await read(0) // cmd_1 is now the most recent
  await read(2) // over the bound: cmd_2 goes
  await read(0)
  await read(2)
  t.same(stores.map((s) => s.reads), [1, 1, 1], 'cmd_1 and cmd_3 stayed')
  await read(1)
  t.equal(stores[1]!.reads, 2, 'cmd_2 was dropped')
})
