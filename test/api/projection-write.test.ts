/**
 * The status projector's write of a command's end (CommandRepository#writeProjection)
 * does the bookkeeping of the end in the same write: it gives back the
 * account's slot and ends the local executor's run, which then writes
 * nothing of its own (issue 31: fewer store operations per command).
 */
import { MongoClient } from 'mongodb'
import t from 'tap'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import { startMongo } from '../harness/mongo.js'
import { COMMAND_DRAFT } from './dispatch-fixtures.js'

t.test("the projector's write of a command's end", async (t) => {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  const repository = new CommandRepository(db)
  await repository.ensureIndexes()
  const commands = db.collection<CommandDocument>('commands')
  const now = new Date('2026-11-28T12:00:00Z')
  const running = { run_state: 'running' as const, run_attempt: 1, run_boot_id: 'this-boot', run_work_dir: '/data/work/x-1' }
  const record = (id: string, run: Partial<CommandDocument> = {}): CommandDocument => ({
    ...newCommandDocument(COMMAND_DRAFT, { commandId: id, accountId: 'acc_1' }, now),
    dispatch_state: 'done',
    dispatch_queue: null,
    ...run,
  })

  t.test('a progress write leaves the run running; the terminal write ends it, keeping the run as the guard', async (t) => {
    await repository.insert([record('cmd_run', running)])
    const read = await repository.findForProjection('cmd_run')
    t.ok(await repository.writeProjection(read!, { status: 'PROCESSING', progress: 50, updated_at: now }))
    t.match(await commands.findOne({ _id: 'cmd_run' }), { status: 'PROCESSING', run_state: 'running' }, 'still running')
    const again = await repository.findForProjection('cmd_run')
    t.ok(await repository.writeProjection(again!, { status: 'SUCCESS', completed_at: now, updated_at: now }))
    t.match(await commands.findOne({ _id: 'cmd_run' }), { status: 'SUCCESS', run_state: 'ended', run_attempt: 1, run_boot_id: 'this-boot', projection_revision: 2 })
  })

  t.test("a command that has no local run (a Kubernetes one) gets no run fields from its end", async (t) => {
    await repository.insert([record('cmd_kube')])
    const read = await repository.findForProjection('cmd_kube')
    t.ok(await repository.writeProjection(read!, { status: 'FAILED', error_status: 'FFMPEG_FAILED', completed_at: now, updated_at: now }))
    const doc = await commands.findOne({ _id: 'cmd_kube' })
    t.equal(doc?.status, 'FAILED')
    t.notOk(doc && 'run_state' in doc, 'no run_state written')
  })

  t.test('a terminal write computed from a stale read lands nowhere, the run included', async (t) => {
    await repository.insert([record('cmd_stale', running)])
    const stale = await repository.findForProjection('cmd_stale')
    t.ok(await repository.writeProjection(stale!, { status: 'PROCESSING', progress: 10, updated_at: now }), 'another round wrote first')
    t.notOk(await repository.writeProjection(stale!, { status: 'FAILED', error_status: 'FFMPEG_FAILED', completed_at: now, updated_at: now }))
    t.match(await commands.findOne({ _id: 'cmd_stale' }), { status: 'PROCESSING', run_state: 'running' })
  })
})
