/**
 * Runner events on their way into a MediaCommand's status. The runner-events
 * consumer adds each event here under its CR's `namespace/name` key and
 * enqueues the key; the reconciler folds the key's pending events into the
 * status it writes, and settles them once that write succeeded (or showed
 * they were already there). Only settling acknowledges an event to JetStream,
 * so an event still here when the operator stops or crashes is delivered
 * again, to whichever replica leads next.
 */
import type { StatusEvent } from '../contracts/status-events.js'

/** The JetStream message an event came in, as far as this module uses it. */
export interface Delivery {
  /** The stream sequence: a redelivery of the same message has the same one. */
  readonly seq: number
  ack(): void
  nak(millis?: number): void
}

export interface RunnerReport {
  readonly event: StatusEvent
  readonly delivery: Delivery
}

export class RunnerReports {
  /** Per CR key, the pending reports by stream sequence (insertion order is stream order). */
  private readonly byKey = new Map<string, Map<number, RunnerReport>>()

  /** Keeps an event until settled; a redelivered message replaces the copy held, so its latest delivery is the one acknowledged. */
  add(key: string, event: StatusEvent, delivery: Delivery): void {
    let reports = this.byKey.get(key)
    if (!reports) this.byKey.set(key, (reports = new Map()))
    reports.set(delivery.seq, { event, delivery })
  }

  /** The key's pending reports, in stream order: what a reconcile folds in and then settles. */
  pending(key: string): readonly RunnerReport[] {
    return [...(this.byKey.get(key)?.values() ?? [])]
  }

  /**
   * The CR status shows these reports (or never can: the CR is gone):
   * acknowledges each and forgets it. Reports added since pending() stay.
   */
  settle(key: string, reports: readonly RunnerReport[]): void {
    const held = this.byKey.get(key)
    if (!held) return
    for (const { delivery } of reports) {
      held.get(delivery.seq)?.delivery.ack()
      held.delete(delivery.seq)
    }
    if (held.size === 0) this.byKey.delete(key)
  }

  /**
   * Hands every unsettled event back to JetStream for immediate redelivery
   * (to the next leader), rather than after the consumer's ack wait. Called
   * once no reconcile runs any more.
   */
  releaseAll(): void {
    for (const reports of this.byKey.values()) {
      for (const { delivery } of reports.values()) {
        try {
          delivery.nak()
        } catch {
          // The connection is gone: JetStream redelivers after the ack wait instead.
        }
      }
    }
    this.byKey.clear()
  }
}
