import { setTimeout as delay } from 'node:timers/promises'

/** The current time, injected so tests can move it instead of sleeping. */
export type Clock = () => Date

export const systemClock: Clock = () => new Date()

/**
 * Waits `ms` or until `signal` aborts, whichever is first; never rejects.
 * Injected so tests can walk a 10-hour retry schedule on a fake clock.
 */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>

/** node's abortable timer, which also drops its abort listener when it fires. */
export const systemSleep: Sleep = (ms, signal) => delay(ms, undefined, { signal }).catch(() => undefined)
