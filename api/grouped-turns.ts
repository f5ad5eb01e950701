/**
 * Calls that share one store statement: the calls that arrive while one
 * group is at the store go out together as the next group, on the next turn
 * of the event loop when the store is idle. A call never joins a group
 * already sent, so its answer is as recent as the store was when it arrived.
 * The group commit of submits and the grouped reads of GET both run on it.
 */
export class GroupedTurns<T> {
  #waiting: T[] = []
  #sending = false

  /**
   * `send` settles every item of its group itself (each item carries its
   * caller's resolve and reject) and never throws.
   */
  constructor(
    private readonly send: (group: T[]) => Promise<void>,
    private readonly maxGroup = Number.POSITIVE_INFINITY,
  ) {}

  add(item: T): void {
    this.#waiting.push(item)
    if (!this.#sending && this.#waiting.length === 1) setImmediate(() => void this.#flush())
  }

  async #flush(): Promise<void> {
    if (this.#sending || this.#waiting.length === 0) return
    this.#sending = true
    const group = this.#waiting.splice(0, this.maxGroup)
    try {
      await this.send(group)
    } finally {
      this.#sending = false
      // What arrived while this group was at the store is the next group.
      if (this.#waiting.length > 0) setImmediate(() => void this.#flush())
    }
  }
}
