import type { Collection } from 'mongodb'
import type { HandOff } from '../executors/executor.js'
import type { CommandDocument, LocalRunFields } from './command-document.js'

/** Which start of the local executor runs a command now, and how many starts its run has had. */
export interface RunOwner {
  attempt: number
  bootId: string
}

/** A run as the local executor starts it. */
export interface RunStart extends RunOwner {
  workDir: string
}

/** A run that another start of the service left running, and the command it runs. */
export interface InterruptedRun {
  doc: CommandDocument
  owner: RunOwner
  workDir: string
}

/** The fields of a run as it starts: every run field at once. */
function startedRunFields(run: RunStart): Required<LocalRunFields> {
  return { run_state: 'running', run_attempt: run.attempt, run_boot_id: run.bootId, run_work_dir: run.workDir }
}

/**
 * The local executor's runs, on the command records (the `run_*` fields):
 * its run-once guard and its restart recovery. Part of the commands
 * collection's one repository (CommandRepository#runs), which alone writes it.
 */
export class CommandRuns {
  constructor(private readonly commands: Collection<CommandDocument>) {}

  /**
   * Starts the command's first run, if it has never had one: the local
   * executor's run-once guard. False when a run was started before (the
   * dispatcher handed the command over again), and then nothing is written.
   * A hand-off from the dispatcher records its run with the hand-off instead
   * (startsWithHandOff), one write for both.
   */
  async startRun(commandId: string, run: RunStart): Promise<boolean> {
    // A cancelled command never starts: the filter, not a read before it, so a cancel racing the hand-off is seen.
    const result = await this.commands.updateOne(
      { _id: commandId, run_attempt: { $exists: false }, cancel_requested_at: { $exists: false } },
      { $set: startedRunFields(run) },
    )
    return result.matchedCount === 1
  }

  /**
   * The run-once guard on a dispatcher's hand-off: the run's fields go in the
   * write that marks the hand-off done, which lands only while the claim that
   * read `claimed` holds the command. A command's hand-off is marked done
   * once, and nothing else writes a first run, so a record the claim read
   * without a run (or a cancel: one requested later waits for the hand-off,
   * then stops the run: api/cancels/canceller.ts) gets its first run here or
   * nowhere. False when the run must not start; then nothing was written,
   * and the dispatcher marks the hand-off done without it.
   */
  async startsWithHandOff(handOff: HandOff, run: RunStart): Promise<boolean> {
    if (handOff.claimed.run_attempt !== undefined || handOff.claimed.cancel_requested_at !== undefined) return false
    return handOff.record(startedRunFields(run))
  }

  /**
   * Takes over a run that `interrupted` owned (another start of the service
   * that died while it ran) as the next attempt; false when another start
   * took it or ended it first.
   */
  async restartRun(commandId: string, interrupted: RunOwner, run: RunStart): Promise<boolean> {
    const result = await this.commands.updateOne(
      { _id: commandId, run_state: 'running', run_attempt: interrupted.attempt, run_boot_id: interrupted.bootId },
      { $set: { run_attempt: run.attempt, run_boot_id: run.bootId, run_work_dir: run.workDir } },
    )
    return result.matchedCount === 1
  }

  /**
   * Ends the run `owner` holds; it is kept on the record, the guard against a
   * second run. A run that ends by a terminal status is ended by the
   * projector's write of that status instead (CommandRepository#writeProjection).
   */
  async endRun(commandId: string, owner: RunOwner): Promise<void> {
    await this.commands.updateOne({ _id: commandId, run_state: 'running', run_attempt: owner.attempt, run_boot_id: owner.bootId }, { $set: { run_state: 'ended' } })
  }

  /** The runs another start of the service left running (it died, or was stopped, while they ran). */
  async interruptedRuns(bootId: string): Promise<InterruptedRun[]> {
    // startRun writes every run field at once, so a running record has them all.
    const docs = await this.commands.find<CommandDocument & Required<LocalRunFields>>({ run_state: 'running', run_boot_id: { $ne: bootId } }).toArray()
    return docs.map((doc) => ({ doc, owner: { attempt: doc.run_attempt, bootId: doc.run_boot_id }, workDir: doc.run_work_dir }))
  }
}
