import type { CommandSpec } from '../../contracts/command-spec.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import type { CommandDocument } from '../commands/command-document.js'

/**
 * The dispatcher's hand-off of a command it claimed, for an executor that
 * records its run on the command record (the local one): it writes the run's
 * fields in the write that marks the hand-off done, one write instead of two.
 */
export interface HandOff {
  /** The record as the claim read it (atomically with taking it): a run or a cancel recorded before the claim shows here. */
  readonly claimed: Pick<CommandDocument, 'run_attempt' | 'cancel_requested_at'>
  /**
   * Marks the hand-off done with `fields` set on the record, if the claim
   * still holds it; false when it does not (another dispatcher took the
   * command over, or a cancel withdrew it), and then nothing was written.
   * At most once; when the executor never calls it, the dispatcher marks
   * the hand-off done itself once `execute` returns.
   */
  record(fields: Record<string, unknown>): Promise<boolean>
}

/**
 * Where the outbox dispatcher hands accepted commands: the local executor runs
 * the runner as a child process, the Kubernetes executor creates a
 * MediaCommand. `execute` must be idempotent: the dispatcher retries until it
 * succeeds, so the same command may arrive twice and must run once.
 */
export interface Executor {
  readonly name: string
  /** `handOff`: the dispatcher's claim of the command, absent when the caller holds none (tests). */
  execute(spec: CommandSpec, handOff?: HandOff): Promise<void>
  /**
   * How many more commands it would start at once, for an executor that
   * queues what it cannot start (the local one, first come first served);
   * absent when it starts everything it is handed (Kubernetes: the cluster
   * queues). The dispatcher hands it no more than this, so the order in which
   * commands start is the dispatcher's.
   */
  freeSlots?(): number
  /** Calls `listener` each time a run ends and frees a slot (with freeSlots): the dispatcher then hands over the next command. */
  onSlotFreed?(listener: () => void): void
  /**
   * Stops the command's run if it has one (api/cancels/canceller.ts): the
   * local executor kills the runner's process group and removes its work
   * dir; the Kubernetes executor marks the MediaCommand cancelled, and the
   * operator deletes its Job and pods. Idempotent; a command with no run is
   * no error. Called after the command was withdrawn from dispatch or handed
   * off, never while a hand-off is in flight.
   */
  cancel?(commandId: string): Promise<void>
}

/**
 * Opens the credentials of the storage destination a spec names, when its
 * runner is about to start (so credentials PATCHed while it queued are used);
 * null when they cannot be found. Kept out of the spec: see
 * contracts/destination-credentials.ts for how each executor hands them over.
 */
export type DestinationCredentialSource = (spec: CommandSpec) => Promise<DestinationCredentials | null>

/**
 * Opens the cookies.txt of the account a yt-dlp spec belongs to, when its
 * runner is about to start; null when the account stored none. Kept out of
 * the spec: see contracts/ytdlp-cookies.ts for how it reaches yt-dlp alone.
 */
export type YtdlpCookieSource = (spec: CommandSpec) => Promise<string | null>
