import type { Teardown } from '../scratch.js'

/**
 * Cleanup steps run last-registered first, every one attempted even when an
 * earlier one fails: the cluster's teardown must put the host back whatever
 * broke. Errors are thrown together at the end.
 */
export class TeardownStack implements Teardown {
  readonly #steps: (() => unknown)[] = []

  teardown(fn: () => unknown): void {
    this.#steps.push(fn)
  }

  async run(): Promise<void> {
    const errors: unknown[] = []
    for (let step = this.#steps.pop(); step; step = this.#steps.pop()) {
      try {
        await step()
      } catch (err) {
        errors.push(err)
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, `cluster teardown: ${errors.map((e) => String(e)).join('\n')}`)
  }
}
