import { setTimeout as delay } from 'node:timers/promises'

/**
 * Waits `ms` or until `signal` aborts, whichever is first; never rejects.
 * Injected so tests can walk the 10-hour retry schedule on a fake clock.
 */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>

export const systemSleep: Sleep = async (ms, signal) => {
  try {
    await delay(ms, undefined, { signal })
  } catch {
    // Aborted: the caller was nudged or is stopping.
  }
}
