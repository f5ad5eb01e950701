/**
 * A counting semaphore: at most `size` holders at once, waiters served in
 * arrival order. `acquire` resolves to a release function, or to null once
 * the slots are closed (the process is stopping).
 */
export class Slots {
  #free: number
  #closed = false
  readonly #waiting: Array<(release: (() => void) | null) => void> = []

  constructor(size: number) {
    this.#free = Math.max(1, size)
  }

  acquire(): Promise<(() => void) | null> {
    if (this.#closed) return Promise.resolve(null)
    if (this.#free > 0) {
      this.#free -= 1
      return Promise.resolve(this.#releaser())
    }
    return new Promise((resolve) => this.#waiting.push(resolve))
  }

  /** Refuses new holders and turns every waiter away. */
  close(): void {
    this.#closed = true
    for (const waiter of this.#waiting.splice(0)) waiter(null)
  }

  #releaser(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.#waiting.shift()
      if (next) next(this.#releaser())
      else this.#free += 1
    }
  }
}
