/**
 * Follows a command to its end: the event stream first (GET
 * /commands/{id}/events), resumed with Last-Event-ID when it drops, and
 * polling GET /commands/{id} once the stream has failed a few times in a row
 * (a proxy that buffers or cuts event streams).
 */
import { ApiError, type CommandEvent, type CommandPollResponse } from '../client/index.js'

export interface FollowDeps {
  /** The command's events from `lastEventId` on (client/command-events.ts). */
  events(commandId: string, lastEventId: string | undefined, signal: AbortSignal): AsyncIterable<CommandEvent>
  /** GET /commands/{id}. */
  get(commandId: string, signal: AbortSignal): Promise<CommandPollResponse>
  sleep(ms: number, signal: AbortSignal): Promise<void>
  /** Each state seen, in order. */
  onUpdate(command: CommandPollResponse): void
  /** Told once, when the stream is given up for polling. */
  onFallback?(reason: string): void
  signal: AbortSignal
}

/** Stream attempts in a row that may fail before polling takes over. */
export const STREAM_ATTEMPTS = 3
export const POLL_INTERVAL_MS = 1_000
/** Polls in a row that may fail (network) before the error is the caller's. */
export const POLL_ATTEMPTS = 10

export function isTerminal(command: CommandPollResponse): boolean {
  return command.status === 'SUCCESS' || command.status === 'FAILED'
}

/** An answer that will not change by asking again: the key, the id, the request. */
function isFinalAnswer(error: unknown): boolean {
  return error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429
}

/** Resolves with the command's terminal state. */
export async function followCommand(commandId: string, deps: FollowDeps): Promise<CommandPollResponse> {
  let lastEventId: string | undefined
  let failures = 0
  let lastReason = ''
  while (failures < STREAM_ATTEMPTS) {
    try {
      for await (const { id, command } of deps.events(commandId, lastEventId, deps.signal)) {
        if (id !== null) lastEventId = id
        failures = 0
        deps.onUpdate(command)
        if (isTerminal(command)) return command
      }
      // Ended without a terminal event (a proxy closed it, or a 204 after our last id): ask once.
      const command = await deps.get(commandId, deps.signal)
      deps.onUpdate(command)
      if (isTerminal(command)) return command
    } catch (error) {
      if (isFinalAnswer(error) || deps.signal.aborted) throw error
      failures += 1
      lastReason = error instanceof Error ? error.message : String(error)
      if (failures < STREAM_ATTEMPTS) await deps.sleep(POLL_INTERVAL_MS * failures, deps.signal)
    }
  }
  deps.onFallback?.(lastReason)
  return pollCommand(commandId, deps)
}

async function pollCommand(commandId: string, deps: FollowDeps): Promise<CommandPollResponse> {
  let failures = 0
  for (;;) {
    try {
      const command = await deps.get(commandId, deps.signal)
      failures = 0
      deps.onUpdate(command)
      if (isTerminal(command)) return command
    } catch (error) {
      if (isFinalAnswer(error) || deps.signal.aborted || ++failures >= POLL_ATTEMPTS) throw error
    }
    await deps.sleep(POLL_INTERVAL_MS, deps.signal)
  }
}
