/**
 * Sends a command's PROCESSING events in order without making a phase wait
 * for NATS: at most one per 5 % of progress, and at most one per `intervalMs`,
 * counted from the throttle's creation (the runner's start). What arrives
 * within an interval is merged into one event carrying the newest stage and
 * the highest progress, sent when the interval ends; a SUCCESS supersedes
 * what is still waiting. Every event is a MongoDB read and write for the
 * status projector, and a short command passes through four stages in a few
 * milliseconds: a remux that used to send six events now sends its SUCCESS
 * alone, and a long command shows PROCESSING within one interval, then at
 * most one update per interval. A lost progress event is only logged: the
 * next one, or the terminal event, replaces it.
 */
import type { Logger } from 'pino'
import type { ProcessingStage, StatusEventBody } from '../../../contracts/status-events.js'
import type { StatusReporter } from './reporter.js'

type ProcessingBody = StatusEventBody & { type: 'PROCESSING' }

/** How the throttle tells time and waits; a test passes its own. */
export interface ThrottleClock {
  now(): number
  /** Calls `fn` after `ms`; returns a cancel. */
  after(ms: number, fn: () => void): () => void
}

export const systemThrottleClock: ThrottleClock = {
  now: () => performance.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms)
    return () => clearTimeout(timer)
  },
}

/** The default spacing of PROCESSING events (FFKUBE_PROGRESS_INTERVAL_MS). */
export const PROGRESS_INTERVAL_MS = 250

export class ProgressThrottle {
  private chain: Promise<void> = Promise.resolve()
  private current: ProcessingStage = 'FETCHING'
  private last = -1
  private pending: ProcessingBody | null = null
  private cancelTimer: (() => void) | null = null
  private lastSentAt: number

  constructor(
    private readonly reporter: StatusReporter,
    private readonly log: Logger,
    private readonly intervalMs = PROGRESS_INTERVAL_MS,
    private readonly clock: ThrottleClock = systemThrottleClock,
  ) {
    this.lastSentAt = clock.now()
  }

  stage(stage: ProcessingStage): void {
    this.current = stage
    this.offer({ type: 'PROCESSING', stage, progress: null })
  }

  percent(percent: number): void {
    if (percent < this.last + 5) return
    this.last = percent
    this.offer({ type: 'PROCESSING', stage: this.current, progress: percent })
  }

  /**
   * Resolves when every event sent so far was published (or given up on).
   * `pending: 'send'` first sends what is waiting for its interval (the end
   * of a phase, or a failure: the record keeps how far the command got);
   * `'drop'` discards it (a SUCCESS follows, which supersedes any stage).
   */
  flush(pending: 'send' | 'drop' = 'send'): Promise<void> {
    if (pending === 'send' && this.pending) this.sendPending()
    this.cancelTimer?.()
    this.cancelTimer = null
    this.pending = null
    return this.chain
  }

  private offer(body: ProcessingBody): void {
    // A stage event carries no percent: the merged event keeps the one it replaces, as the projector would.
    this.pending = { ...body, progress: body.progress ?? this.pending?.progress ?? null }
    const wait = this.lastSentAt + this.intervalMs - this.clock.now()
    if (wait <= 0) this.sendPending()
    else this.cancelTimer ??= this.clock.after(wait, () => this.sendPending())
  }

  private sendPending(): void {
    this.cancelTimer?.()
    this.cancelTimer = null
    const body = this.pending
    if (!body) return
    this.pending = null
    this.lastSentAt = this.clock.now()
    this.chain = this.chain.then(() => this.reporter.report(body)).catch((error: unknown) => this.log.warn({ err: error }, 'progress event lost'))
  }
}
