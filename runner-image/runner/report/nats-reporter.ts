/**
 * Publishes status events to NATS JetStream with `Nats-Msg-Id` = event_id,
 * so the stream's duplicate window drops a re-sent event.
 */
import { connect, JSONCodec, RetentionPolicy, type JetStreamClient, type NatsConnection } from 'nats'
import type { Logger } from 'pino'
import { STATUS_STREAM, STATUS_SUBJECT_PREFIX, statusSubject, type StatusEventBody } from '../../../contracts/status-events.js'
import { envelope, type StatusReporter } from './reporter.js'

const codec = JSONCodec()

/** Creates the status stream when it does not exist yet (idempotent). */
export async function ensureStatusStream(nc: NatsConnection): Promise<void> {
  const jsm = await nc.jetstreamManager()
  try {
    await jsm.streams.info(STATUS_STREAM)
  } catch {
    await jsm.streams.add({
      name: STATUS_STREAM,
      subjects: [`${STATUS_SUBJECT_PREFIX}.>`],
      retention: RetentionPolicy.Limits,
      // Two minutes of de-duplication covers a runner restart re-sending its events.
      duplicate_window: 120_000_000_000,
    })
  }
}

export interface NatsReporterOptions {
  url: string
  commandId: string
  logger: Logger
  now?: () => Date
  sleep?: (ms: number) => Promise<void>
  attempts?: number
}

export class NatsReporter implements StatusReporter {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly options: NatsReporterOptions,
  ) {}

  static async connect(options: NatsReporterOptions): Promise<NatsReporter> {
    const nc = await connect({ servers: options.url, name: `ffkube-runner-${options.commandId}` })
    await ensureStatusStream(nc)
    return new NatsReporter(nc, nc.jetstream(), options)
  }

  async report(body: StatusEventBody): Promise<void> {
    const { commandId, logger } = this.options
    const now = this.options.now ?? (() => new Date())
    const sleep = this.options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
    const attempts = this.options.attempts ?? 6
    const event = envelope(commandId, body, now)
    for (let attempt = 1; ; attempt++) {
      try {
        await this.js.publish(statusSubject(commandId), codec.encode(event), { msgID: event.event_id })
        return
      } catch (error) {
        // A progress event may be lost; a terminal one must not, so retry before giving up.
        if (attempt >= attempts) throw error
        logger.warn({ command_id: commandId, err: error, attempt }, 'status publish failed, retrying')
        await sleep(Math.min(200 * 2 ** attempt, 5000))
      }
    }
  }

  async close(): Promise<void> {
    await this.nc.drain()
  }
}
