/**
 * One work list per key (a command id), worked one round at a time: two
 * rounds of one key never overlap, rounds of different keys run side by side.
 * A round takes, when it asks, everything waiting for its key, so items that
 * arrive while a round is busy are handled together by the next one. Nothing
 * waits for more items to come: the first item of an idle key starts a round
 * at once.
 */

/**
 * Does one round's work. It must call `take()`, which hands over every item
 * waiting for the key at that moment; calling it late (after a read, say) lets
 * more items join the round.
 */
export type Round<T> = (key: string, take: () => T[]) => Promise<void>

interface KeyQueue<T> {
  waiting: T[]
  done: Promise<void>
}

export class CoalescingQueues<T> {
  readonly #queues = new Map<string, KeyQueue<T>>()

  /** `onError` hears of a round that threw; its items were taken and are the round's to settle. */
  constructor(
    private readonly round: Round<T>,
    private readonly onError: (err: unknown, key: string) => void,
  ) {}

  /** Adds an item after the key's earlier ones; starts a round now when the key is idle. */
  push(key: string, item: T): void {
    const queue = this.#queues.get(key)
    if (queue) {
      queue.waiting.push(item)
      return
    }
    const fresh: KeyQueue<T> = { waiting: [item], done: Promise.resolve() }
    this.#queues.set(key, fresh)
    fresh.done = this.#work(key, fresh)
  }

  /** Keys with a round running or items waiting. */
  get busy(): number {
    return this.#queues.size
  }

  /** Resolves when every key's items have been handled. */
  async idle(): Promise<void> {
    while (this.#queues.size > 0) await Promise.all([...this.#queues.values()].map((queue) => queue.done))
  }

  async #work(key: string, queue: KeyQueue<T>): Promise<void> {
    // The check and the delete run without an await between them, so no push can fall in the gap.
    while (queue.waiting.length > 0) {
      try {
        await this.round(key, () => queue.waiting.splice(0))
      } catch (err) {
        this.onError(err, key)
      }
    }
    this.#queues.delete(key)
  }
}
