/**
 * What a runner's status events (contracts/status-events.ts) add to its
 * MediaCommand's status: progress while it runs, the outputs once it
 * succeeded, and its own failure reason. The phase stays the Job's to decide
 * (status.ts); these fields only add detail, and only move forward, so folding
 * an event twice, or an old one after a newer, changes nothing. Pure.
 */
import { isDeepStrictEqual } from 'node:util'
import { isTerminalStatus } from '../contracts/command-types.js'
import type { MediaCommandStatus } from '../contracts/media-command.js'
import type { StatusEvent } from '../contracts/status-events.js'

const BYTES_PER_MB = 1024 * 1024
/** The CR is for `kubectl describe`; MongoDB keeps the whole message. */
const MAX_MESSAGE_LENGTH = 2048

/** The status with one event folded in; the same object when the event adds nothing. */
export function withRunnerEvent(status: MediaCommandStatus, event: StatusEvent): MediaCommandStatus {
  const next: MediaCommandStatus = { ...status }
  if (event.type === 'PROCESSING' && event.progress !== null && !isTerminalStatus(status.phase)) {
    const progress = Math.floor(Math.min(100, Math.max(0, event.progress)))
    if (progress > (status.progress ?? 0)) next.progress = progress
  }
  if (event.type === 'SUCCESS') {
    const outputs = Object.entries(event.output_files).sort(([a], [b]) => a.localeCompare(b)).map(([alias, file]) => ({
      alias, filename: file.filename, ...(file.size_mbytes === null ? {} : { sizeBytes: Math.round(file.size_mbytes * BYTES_PER_MB) }),
    }))
    if (!isDeepStrictEqual(status.outputs, outputs)) next.outputs = outputs
    next.progress = 100
  }
  if (event.type === 'FAILED' && !status.runnerErrorStatus) {
    // Kept apart from errorStatus, which is derived from the Job; status.ts prefers it to a generic RUNNER_FAILED.
    next.runnerErrorStatus = event.error_status
    next.runnerErrorMessage = event.error_message.slice(0, MAX_MESSAGE_LENGTH)
  }
  return isDeepStrictEqual(next, status) ? status : next
}

/** The status with every event folded in, in order. */
export function withRunnerEvents(status: MediaCommandStatus, events: readonly StatusEvent[]): MediaCommandStatus {
  return events.reduce(withRunnerEvent, status)
}

/** How long a runner's SUCCESS may wait for its Job's end before it is written on its own. */
export const SUCCESS_WAIT_MS = 10_000

/**
 * How long to hold a runner's SUCCESS back from the status, or undefined to write now. The
 * runner reports SUCCESS just before its pod exits, and the Job's end reconciles the command
 * again within moments: written then, the outputs and the phase are one status write instead of
 * two (each write is an etcd write and a watch event to every watcher). Held only while the
 * Job has not ended, nothing else in the status changed, and the report is younger than `waitMs`:
 * a Job that does not end soon still gets the outputs written.
 */
export function successWaitMs(reports: readonly StatusEvent[], now: Date, waitMs = SUCCESS_WAIT_MS): number | undefined {
  const success = reports.find((event) => event.type === 'SUCCESS')
  if (!success) return undefined
  const left = Date.parse(success.emitted_at) + waitMs - now.getTime()
  return left > 0 ? left : undefined
}
