import type { Collection } from 'mongodb'
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
   */
  async startRun(commandId: string, run: RunStart): Promise<boolean> {
    // A cancelled command never starts: the filter, not a read before it, so a cancel racing the hand-off is seen.
    const result = await this.commands.updateOne(
      { _id: commandId, run_attempt: { $exists: false }, cancel_requested_at: { $exists: false } },
      { $set: { run_state: 'running', run_attempt: run.attempt, run_boot_id: run.bootId, run_work_dir: run.workDir } },
    )
    return result.matchedCount === 1
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

  /** Ends the run `owner` holds; it is kept on the record, the guard against a second run. */
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
