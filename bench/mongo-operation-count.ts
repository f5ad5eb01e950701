/**
 * Counts the MongoDB operations a process sends, by command and collection,
 * for benchmarks that ask where a command's time goes. Loaded into the
 * service with `--import` (see operationCountingOptions); it turns on the
 * driver's command monitoring for every client the process connects and, on
 * SIGUSR2, writes the counts so far to FFKUBE_BENCH_MONGODB_OPERATIONS as JSON.
 * Bench-only: nothing in the product imports it.
 */
import type { ChildProcess } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { MongoClient } from 'mongodb'

/** `find commands` → count. */
export type OperationCounts = Record<string, number>

const target = process.env.FFKUBE_BENCH_MONGODB_OPERATIONS

if (target) {
  const counts: OperationCounts = {}
  const connect = MongoClient.prototype.connect
  MongoClient.prototype.connect = function (this: MongoClient) {
    // A setter the driver has but its typings omit; equivalent to the monitorCommands option.
    const monitored = this as unknown as { monitorCommands: boolean }
    if (!monitored.monitorCommands) {
      monitored.monitorCommands = true
      this.on('commandStarted', (event) => {
        const collection = event.command[event.commandName] as unknown
        const key = `${event.commandName} ${typeof collection === 'string' ? collection : '-'}`
        counts[key] = (counts[key] ?? 0) + 1
      })
    }
    return connect.call(this)
  }
  process.on('SIGUSR2', () => writeFileSync(target, JSON.stringify(counts)))
}

/** The NODE_OPTIONS that load this counter (compiled next to it in dist/bench). */
export function operationCountingOptions(): string {
  return `--import=${join(import.meta.dirname, 'mongo-operation-count.js')}`
}

/** Operations in `after` not in `before`, per command, busiest first; drops what is < 0.05 per command. */
export function operationsPerCommand(before: OperationCounts, after: OperationCounts, commands: number): Array<[string, number]> {
  return Object.entries(after)
    .map(([key, n]): [string, number] => [key, Math.round(((n - (before[key] ?? 0)) / commands) * 100) / 100])
    .filter(([, n]) => n >= 0.05)
    .sort((a, b) => b[1] - a[1])
}

/**
 * Asks a process started with operationCountingOptions for its counts so far
 * (it writes them to `file` on SIGUSR2) and reads them once written.
 */
export async function requestOperationCounts(child: ChildProcess, file: string): Promise<OperationCounts> {
  rmSync(file, { force: true })
  child.kill('SIGUSR2')
  for (let i = 0; i < 250; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    // The writer writes the whole file in one call; a partial read is retried.
    const text = await readFile(file, 'utf8').catch(() => null)
    if (text) {
      try {
        return JSON.parse(text) as OperationCounts
      } catch {
        continue
      }
    }
  }
  throw new Error('the process did not write its MongoDB operation counts')
}

/** All operations in `after` not in `before`, per request. */
export function operationsPerRequest(before: OperationCounts, after: OperationCounts, requests: number): number {
  const total = (counts: OperationCounts) => Object.values(counts).reduce((sum, n) => sum + n, 0)
  return (total(after) - total(before)) / Math.max(1, requests)
}
