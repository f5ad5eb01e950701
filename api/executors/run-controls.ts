/**
 * The runs one local executor holds, by command id, as a cancel sees them:
 * registered before the run-once guard, so a cancel that races the hand-off
 * never misses one, and dropped when the run ends.
 */
import type { RunnerProcess } from './runner-pool.js'

/** What a cancel needs of a command this process runs (or is about to): its runner, once started, and when the run ends. */
export interface RunControl {
  runner: RunnerProcess | null
  cancelled: boolean
  /** Resolves when the run has ended and its work dir is removed. */
  ended: Promise<void>
}

export class RunControls {
  readonly #byCommand = new Map<string, RunControl>()
  /** Resolves a run's `ended`, by its control. */
  readonly #end = new WeakMap<RunControl, () => void>()

  /** Registers a run of the command about to start. */
  open(commandId: string): RunControl {
    let end = () => {}
    const control: RunControl = { runner: null, cancelled: false, ended: new Promise((resolve) => (end = resolve)) }
    this.#byCommand.set(commandId, control)
    this.#end.set(control, end)
    return control
  }

  /** Forgets a run that never started (its guard said no). */
  drop(commandId: string): void {
    this.#byCommand.delete(commandId)
  }

  /** The run ended: a cancel waiting for it goes on, and a later one finds nothing to stop. */
  close(commandId: string, control: RunControl): void {
    if (this.#byCommand.get(commandId) === control) this.#byCommand.delete(commandId)
    this.#end.get(control)?.()
  }

  /**
   * Stops the command's run if this process holds one: a run still waiting
   * for a slot never starts its runner; a running one is killed, and this
   * resolves once it has ended.
   */
  async cancel(commandId: string): Promise<void> {
    const control = this.#byCommand.get(commandId)
    if (!control) return
    control.cancelled = true
    if (!control.runner) return
    control.runner.kill('SIGKILL')
    await control.ended
  }
}
