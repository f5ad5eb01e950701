/**
 * The service on a NATS server with users (ADR 0010): it connects as the
 * service user from NATS_USER and NATS_PASSWORD, runs commands, and its admin
 * CLI's announcements reach the replicas; without the credentials it does not
 * start, and says why.
 */
import { spawn } from 'node:child_process'
import { connect } from 'nats'
import t from 'tap'
import { ACCOUNT_CHANGES_SUBJECT } from '../../api/accounts/account-changes.js'
import { startAuthorizedNats } from '../harness/nats.js'
import { Client, createAccount, serviceEnvironment, serviceWithRemux, startService } from './service.js'

t.test('the service runs a command on a NATS server with users, as the service user', async (t) => {
  const nats = await startAuthorizedNats(t)
  const environment = await serviceEnvironment(t, { NATS_URL: nats.url, NATS_USER: nats.service.user, NATS_PASSWORD: nats.service.pass })
  const { service, api, remux } = await serviceWithRemux(t, environment)
  const { command_id } = await api.post('/run-ffmpeg-command', remux)
  t.match(await api.waitForCommand(command_id), { status: 'SUCCESS' }, 'dispatched, run, projected: every NATS path of local mode')

  // The admin CLI announces a revocation as the service user too: a replica hears it.
  const watcher = await connect({ servers: nats.url, ...nats.service })
  t.teardown(() => watcher.close())
  const announced = new Promise<string>((resolve) => watcher.subscribe(ACCOUNT_CHANGES_SUBJECT, { max: 1, callback: (_err, msg) => resolve(msg.string()) }))
  await watcher.flush()
  const account = await createAccount(environment, 'growth')
  const revoke = spawn(process.execPath, ['dist/api/admin/cli.js', 'revoke-key', '--key', account.key_id], { env: environment.env, stdio: ['ignore', 'ignore', 'inherit'] })
  t.equal(await new Promise((resolve) => revoke.once('exit', resolve)), 0)
  t.match(JSON.parse(await announced), { kind: 'key', key_id: account.key_id }, 'the revocation went out over NATS')
  t.equal((await new Client({ baseUrl: service.baseUrl, apiKey: account.api_key }).request('GET', '/commands')).status, 401)
})

t.test('without NATS_USER and NATS_PASSWORD the service does not start on a server with users, and says why', async (t) => {
  const nats = await startAuthorizedNats(t)
  const environment = await serviceEnvironment(t, { NATS_URL: nats.url })
  const error = await startService(t, environment).then(
    () => null,
    (err: unknown) => err,
  )
  t.match(String(error), /exited 1 before listening/)
  t.match(String(error), /Authorization Violation/i, 'the log names the refusal')
})
