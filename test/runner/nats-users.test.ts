/**
 * ADR 0010's NATS users on a real nats-server (contracts/nats-authorization.ts):
 * what the runner user may do (publish its command's events and log chunks,
 * JetStream acking on its own inbox) and every door it must find shut. Each
 * refusal is the server's own `-ERR Permissions Violation`, awaited as an
 * event; where a refused write would leave a trace, the trace is looked for
 * after a later write that must come after it.
 */
import { connect, ErrorCode, Events, JSONCodec, NatsError, StorageType, type NatsConnection } from 'nats'
import { pino } from 'pino'
import t, { type Test } from 'tap'
import { natsAuthorization, RUNNER_INBOX_PREFIX } from '../../contracts/nats-authorization.js'
import { LOG_STREAM, logSubject, type LogChunk } from '../../contracts/log-chunks.js'
import { STATUS_STREAM, STATUS_SUBJECT_PREFIX, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { ACCOUNT_CHANGES_SUBJECT } from '../../api/accounts/account-changes.js'
import { RATE_LIMIT_BUCKET } from '../../api/rate-limit/window-counter.js'
import { COMPLETION_SUBJECT_PREFIX } from '../../contracts/completion-events.js'
import { NatsReporter } from '../../runner-image/runner/report/nats-reporter.js'
import { createServiceStreams, startAuthorizedNats, type AuthorizedNats } from '../harness/nats.js'

const logger = pino({ level: 'silent' })

/** The server's permission refusals on `nc`, by subject, as they arrive. */
function refusals(nc: NatsConnection): { next: (subject: string) => Promise<string> } {
  const seen: string[] = []
  const waiting = new Map<string, () => void>()
  void (async () => {
    for await (const status of nc.status()) {
      const context = (status as { permissionContext?: { operation: string; subject: string } }).permissionContext
      if (status.type !== Events.Error || !context) continue
      seen.push(`${context.operation} ${context.subject}`)
      waiting.get(context.subject)?.()
    }
  })()
  return {
    next: (subject) =>
      new Promise((resolve) => {
        const found = () => resolve(seen.find((entry) => entry.endsWith(` ${subject}`)) as string)
        if (seen.some((entry) => entry.endsWith(` ${subject}`))) found()
        else waiting.set(subject, found)
      }),
  }
}

async function serverWithStreams(t: Test): Promise<{ nats: AuthorizedNats; service: NatsConnection; runner: NatsConnection }> {
  const nats = await startAuthorizedNats(t)
  await createServiceStreams(t, nats, nats.service)
  const service = await connect({ servers: nats.url, ...nats.service })
  const runner = await connect({ servers: nats.url, ...nats.runner, inboxPrefix: RUNNER_INBOX_PREFIX })
  t.teardown(async () => {
    await runner.close()
    await service.close()
  })
  return { nats, service, runner }
}

t.test('the configuration refuses passwords it would have to escape, and one password for both users', async (t) => {
  t.throws(() => natsAuthorization({ servicePassword: 'a"; permissions: {}', runnerPassword: 'r'.repeat(20) }), /servicePassword must be 16 to 256 characters/)
  t.throws(() => natsAuthorization({ servicePassword: 's'.repeat(20), runnerPassword: 'short' }), /runnerPassword must be 16 to 256/)
  t.throws(() => natsAuthorization({ servicePassword: 'p'.repeat(20), runnerPassword: 'p'.repeat(20) }), /must differ/)
})

t.test('an anonymous connection, as the ffmpeg container could open one, is refused at connect', async (t) => {
  const nats = await startAuthorizedNats(t)
  const error = await connect({ servers: nats.url, maxReconnectAttempts: 0 }).then(
    async (nc) => {
      await nc.close()
      return null
    },
    (err: unknown) => err,
  )
  t.ok(error instanceof NatsError && error.code === ErrorCode.AuthorizationViolation, `refused: ${String(error)}`)
  const wrong = await connect({ servers: nats.url, user: nats.runner.user, pass: `${nats.runner.pass}x`, maxReconnectAttempts: 0 }).then(
    async (nc) => {
      await nc.close()
      return null
    },
    (err: unknown) => err,
  )
  t.ok(wrong instanceof NatsError && wrong.code === ErrorCode.AuthorizationViolation, `a wrong password is refused: ${String(wrong)}`)
})

t.test("the runner's reporter, as the runner user, lands its events and log chunks in the service's streams", async (t) => {
  const { nats, service } = await serverWithStreams(t)
  const commandId = `c-${Date.now()}`
  const reporter = await NatsReporter.connect({ url: nats.url, credentials: nats.runner, commandId, logger })
  await reporter.report({ type: 'PROCESSING', stage: 'RUNNING', progress: 40 })
  const chunk: LogChunk = { command_id: commandId, source: 'r1', seq: 1, text: 'frame=1\n', dropped_bytes: 0, emitted_at: new Date().toISOString() }
  await reporter.log(chunk)
  await reporter.close()
  const jsm = await service.jetstreamManager()
  const event = await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(commandId) })
  t.match(JSONCodec<StatusEvent>().decode(event.data), { type: 'PROCESSING', command_id: commandId, progress: 40 })
  const logged = await jsm.streams.getMessage(LOG_STREAM, { last_by_subj: logSubject(commandId) })
  t.match(JSONCodec<LogChunk>().decode(logged.data), { command_id: commandId, text: 'frame=1\n' })
})

t.test('the runner user cannot call the JetStream API: no stream listed, read or deleted', async (t) => {
  const { service, runner } = await serverWithStreams(t)
  const commandId = `c-${Date.now()}`
  await service.jetstream().publish(statusSubject(commandId), JSONCodec().encode({ marker: true }))
  const refused = refusals(runner)
  const deleteSubject = `$JS.API.STREAM.DELETE.${STATUS_STREAM}`
  const deleting = runner.request(deleteSubject, undefined, { timeout: 10_000 }).then(
    () => 'answered',
    (err: unknown) => (err instanceof NatsError && err.code === ErrorCode.PermissionsViolation ? 'refused' : `failed otherwise: ${String(err)}`),
  )
  t.equal(await refused.next(deleteSubject), `publish ${deleteSubject}`)
  t.equal(await deleting, 'refused')
  await t.rejects(runner.jetstreamManager(), 'the JetStream manager cannot even ask for the account info')
  const info = await (await service.jetstreamManager()).streams.info(STATUS_STREAM)
  t.equal(info.state.messages, 1, 'the status stream is whole')
})

t.test("the runner user cannot write the service's rate-limit counts (KV)", async (t) => {
  const { service, runner } = await serverWithStreams(t)
  const kv = await service.jetstream().views.kv(RATE_LIMIT_BUCKET, { history: 1, storage: StorageType.Memory })
  const refused = refusals(runner)
  const subject = `$KV.${RATE_LIMIT_BUCKET}.k`
  runner.publish(subject, JSONCodec().encode({ forged: true }))
  t.equal(await refused.next(subject), `publish ${subject}`)
  await kv.put('k', JSONCodec().encode({ marker: true }))
  const entry = await kv.get('k')
  t.same(entry && JSONCodec().decode(entry.value), { marker: true })
  t.equal(entry?.revision, 1, "the service's write is the bucket's first and only")
})

t.test('the runner user cannot announce an account change or a completion', async (t) => {
  const { service, runner } = await serverWithStreams(t)
  const seen: string[] = []
  const sub = service.subscribe(ACCOUNT_CHANGES_SUBJECT, { callback: (_err, msg) => void seen.push(msg.string()) })
  t.teardown(() => sub.unsubscribe())
  await service.flush()
  const refused = refusals(runner)
  runner.publish(ACCOUNT_CHANGES_SUBJECT, 'forged')
  const completion = `${COMPLETION_SUBJECT_PREFIX}.c-1`
  runner.publish(completion, 'forged')
  t.equal(await refused.next(ACCOUNT_CHANGES_SUBJECT), `publish ${ACCOUNT_CHANGES_SUBJECT}`)
  t.equal(await refused.next(completion), `publish ${completion}`)
  service.publish(ACCOUNT_CHANGES_SUBJECT, 'marker')
  await service.flush()
  t.same(seen, ['marker'], 'the subscriber saw the service, never the runner')
})

t.test("the runner user cannot read other commands' status, nor the services' inboxes", async (t) => {
  const { runner } = await serverWithStreams(t)
  const refused = refusals(runner)
  for (const subject of ['_INBOX.>', `${STATUS_SUBJECT_PREFIX}.>`, '>']) {
    const ended = new Promise<unknown>((resolve) => runner.subscribe(subject, { callback: (err) => resolve(err) }))
    t.equal(await refused.next(subject), `subscription ${subject}`)
    const err = await ended
    t.ok(err instanceof NatsError && err.code === ErrorCode.PermissionsViolation, `${subject}: the subscription ends with the refusal`)
  }
})
