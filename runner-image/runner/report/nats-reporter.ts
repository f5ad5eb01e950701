/**
 * Publishes status events to NATS JetStream with `Nats-Msg-Id` = event_id,
 * so the stream's duplicate window drops a re-sent event.
 *
 * It only publishes: it makes no JetStream API request (no stream info or
 * create). The streams are the service's, created by the worker and the
 * operator at their start, before any runner exists for a command; a runner
 * that could create or inspect streams could also list every command id or
 * delete them (docs/adr/0010-nats-authorization.md).
 */
import { connect, ErrorCode, NatsError, type JetStreamClient, type NatsConnection } from 'nats'
import type { Logger } from 'pino'
import { publishLogChunk } from '../../../contracts/log-publisher.js'
import { RUNNER_INBOX_PREFIX } from '../../../contracts/nats-authorization.js'
import type { LogChunk } from '../../../contracts/log-chunks.js'
import type { StatusEventBody } from '../../../contracts/status-events.js'
import { publishStatusEvent } from '../../../contracts/status-publisher.js'
import { envelope, type StatusReporter } from './reporter.js'

export interface NatsReporterOptions {
  url: string
  /** The runner user of contracts/nats-authorization.ts, when the server has users (ADR 0010); none on an open server. */
  credentials?: { user: string; pass: string }
  commandId: string
  logger: Logger
  now?: () => Date
  sleep?: (ms: number) => Promise<void>
  attempts?: number
}

/** No stream stored a status event after every retry: the worker or operator that creates FFKUBE_STATUS has not run, or it was deleted. */
export class StatusStreamMissingError extends Error {
  override readonly name = 'StatusStreamMissingError'
  constructor(commandId: string, cause: unknown) {
    super(`no JetStream stream takes ffkube.status.${commandId} (no responders): FFKUBE_STATUS is created by the worker and the operator at their start, never by a runner`, { cause })
  }
}

export class NatsReporter implements StatusReporter {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly options: NatsReporterOptions,
  ) {}

  static async connect(options: NatsReporterOptions): Promise<NatsReporter> {
    return (await NatsReporter.open(options, `ffkube-runner-${options.commandId}`))(options.commandId)
  }

  /**
   * Connects before the command is known (a warm pod's runner waits for it:
   * operator/warm-pods.ts); the function it resolves with makes the reporter
   * of the command once it is. Call it once: its reporter's close() ends the
   * connection.
   */
  static async open(options: Omit<NatsReporterOptions, 'commandId'>, name: string): Promise<(commandId: string) => NatsReporter> {
    // A container that starts while NATS restarts waits for it (about a minute, then fails)
    // instead of failing its command at once; the same bound holds for a drop mid-run.
    // JetStream acks a publish on the publisher's inbox: the runner user may subscribe to its own prefix only.
    const nc = await connect({ servers: options.url, ...options.credentials, inboxPrefix: RUNNER_INBOX_PREFIX, name, waitOnFirstConnect: true, maxReconnectAttempts: 60, reconnectTimeWait: 1000 })
    return (commandId) => new NatsReporter(nc, nc.jetstream(), { ...options, commandId })
  }

  async report(body: StatusEventBody): Promise<void> {
    const { commandId, logger, attempts, sleep } = this.options
    const event = envelope(commandId, body, this.options.now ?? (() => new Date()))
    try {
      await publishStatusEvent(this.js, event, { logger, attempts, sleep })
    } catch (err) {
      // JetStream answers a publish no stream takes with "no responders": say which stream is missing.
      if (err instanceof NatsError && err.code === ErrorCode.NoResponders) throw new StatusStreamMissingError(event.command_id, err)
      throw err
    }
  }

  async log(chunk: LogChunk): Promise<void> {
    await publishLogChunk(this.js, chunk)
  }

  async close(): Promise<void> {
    await this.nc.drain()
  }
}
