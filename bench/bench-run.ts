/**
 * How a benchmark script starts and ends. Its harness servers and scratch
 * dirs register their teardowns with `t`, as they do with tap's in the tests
 * whose harness the benches share; `run` runs the script's main, prints a
 * failure with exit code 1, then runs the teardowns in reverse and `after`.
 */
import type { Teardown } from '../test/harness/scratch.js'

export interface BenchRun {
  t: Teardown
  run(main: () => Promise<void>, after?: () => Promise<unknown>): Promise<void>
}

export function benchRun(): BenchRun {
  const teardowns: Array<() => unknown> = []
  return {
    t: { teardown: (fn) => void teardowns.push(fn) },
    async run(main, after) {
      try {
        await main()
      } catch (err: unknown) {
        const cause = (err as { cause?: unknown } | undefined)?.cause
        process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}${cause ? `\ncause: ${String(cause)}` : ''}\n`)
        process.exitCode = 1
      } finally {
        for (const fn of teardowns.reverse()) await fn()
        await after?.()
      }
    },
  }
}
