/**
 * Sends a command's PROCESSING events in order without making a step wait for
 * NATS, and at most one per 5 % of progress. A lost progress event is only
 * logged: the next one, or the terminal event, replaces it.
 */
import type { Logger } from 'pino'
import type { ProcessingStage, StatusEventBody } from '../../contracts/status-events.js'
import type { StatusReporter } from './reporter.js'

export class ProgressThrottle {
  private chain: Promise<void> = Promise.resolve()
  private current: ProcessingStage = 'FETCHING'
  private last = -1

  constructor(private readonly reporter: StatusReporter, private readonly log: Logger) {}

  stage(stage: ProcessingStage): void {
    this.current = stage
    this.send({ type: 'PROCESSING', stage, progress: null })
  }

  percent(percent: number): void {
    if (percent < this.last + 5) return
    this.last = percent
    this.send({ type: 'PROCESSING', stage: this.current, progress: percent })
  }

  /** Resolves when every event sent so far was published (or given up on). */
  flush(): Promise<void> {
    return this.chain
  }

  private send(body: StatusEventBody): void {
    this.chain = this.chain.then(() => this.reporter.report(body)).catch((error: unknown) => this.log.warn({ err: error }, 'progress event lost'))
  }
}
