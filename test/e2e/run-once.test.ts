import { MongoClient } from 'mongodb'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import type { CommandDocument } from '../../api/commands/command-document.js'
import { serviceEnvironment, serviceWithRemux } from './service.js'

t.test('a command handed to the local executor again after its run ended is not run again', async (t) => {
  const environment = await serviceEnvironment(t)
  const { api, remux } = await serviceWithRemux(t, environment)
  const { command_id } = await api.post('/run-ffmpeg-command', remux)
  t.equal((await api.waitForCommand(command_id)).status, 'SUCCESS')

  const client = await MongoClient.connect(environment.env.MONGODB_URL as string)
  t.teardown(() => client.close())
  const db = client.db(environment.env.MONGODB_DATABASE as string)
  const commands = db.collection<CommandDocument>('commands')
  await eventually('the run has ended', async () => (await commands.countDocuments({ _id: command_id, run_state: 'ended' })) === 1, 10_000)
  const before = await commands.findOne({ _id: command_id })
  t.match(before, { run_state: 'ended', run_attempt: 1, dispatch_state: 'done', dispatch_attempts: 1 }, 'one run, ended')

  // What a crash between the hand-off and marking it done leaves, once the leases have ended: the
  // record waiting and due in its account's queue, and the account due again in the schedule
  // (api/dispatcher/account-schedule.ts).
  await commands.updateOne({ _id: command_id, dispatch_state: 'done' }, { $set: { dispatch_state: 'waiting', dispatch_due_at: new Date(), dispatch_claim: null, dispatch_queue: before!.account_id } })
  const accountTurn = await db.collection<{ _id: string }>('dispatch_accounts').updateOne({ _id: before!.account_id }, { $set: { state: 'waiting', due_at: new Date() } })
  t.equal(accountTurn.matchedCount, 1, 'the account has a turn record to put back')
  await eventually('the command is handed off again', async () => (await commands.countDocuments({ _id: command_id, dispatch_state: 'done', dispatch_attempts: 2 })) === 1, 10_000)
  const after = await commands.findOne({ _id: command_id })
  t.match(after, { run_state: 'ended', run_attempt: 1, run_boot_id: before?.run_boot_id, run_work_dir: before?.run_work_dir }, 'the run on the record is the guard: no second run')
  t.match(await api.waitForCommand(command_id), { status: 'SUCCESS' })
})
