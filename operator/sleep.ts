/**
 * Waits `ms` or until `signal` aborts, whichever is first; never rejects.
 * node's abortable timer drops its abort listener when it fires, so a
 * long-lived signal does not collect one listener per sleep.
 */
import { setTimeout as delay } from 'node:timers/promises'

export const abortableSleep = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal }).catch(() => undefined)
