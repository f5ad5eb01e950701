/**
 * The runs one local executor holds, by command id, as a cancel and stop()
 * see them: at most `size` have a runner at once, the others wait their turn
 * in arrival order. A run is registered before the run-once guard, so a
 * cancel that races the hand-off never misses one, and dropped when it ends.
 */
import type { RunnerProcess } from './runner-pool.js'

/** What a cancel needs of a command this process runs (or is about to): its runner while it runs, and when the run ends. */
export interface RunControl {
  /** Null before the runner starts and once it has exited: its warm worker may run another command by then. */
  runner: RunnerProcess | null
  cancelled: boolean
  /** Resolves when the run has ended and its work dir is removed. */
  ended: Promise<void>
}

export class RunControls {
  readonly #byCommand = new Map<string, RunControl>()
  /** Resolves a run's `ended`, by its control. */
  readonly #end = new WeakMap<RunControl, () => void>()
  #free: number
  /** Runs waiting for a turn, first come first served. */
  readonly #waiting: Array<(release: (() => void) | null) => void> = []
  #stopped = false

  constructor(size: number) {
    this.#free = Math.max(1, size)
  }

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

  /** Waits for a turn to run a runner: resolves to the function that gives it back, or to null once stopped. */
  turn(): Promise<(() => void) | null> {
    if (this.#stopped) return Promise.resolve(null)
    if (this.#free > 0) {
      this.#free -= 1
      return Promise.resolve(this.#releaser())
    }
    return new Promise((resolve) => this.#waiting.push(resolve))
  }

  /** The run's runner started: a cancel or stop() from now on kills it; one cancelled meanwhile is killed at once. */
  started(control: RunControl, runner: RunnerProcess): void {
    control.runner = runner
    if (control.cancelled) runner.kill('SIGKILL')
  }

  /** The run's runner exited: nothing of it is left to kill. */
  exited(control: RunControl): void {
    control.runner = null
  }

  /** The run ended: a cancel waiting for it goes on, and a later one finds nothing to stop. */
  close(commandId: string, control: RunControl): void {
    if (this.#byCommand.get(commandId) === control) this.#byCommand.delete(commandId)
    this.#end.get(control)?.()
  }

  /**
   * Stops the command's run if this process holds one: a run still waiting
   * for its turn never starts its runner; a running one is killed, and this
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

  /** Turns every waiting run away and kills every runner (the service is stopping). */
  stop(): void {
    this.#stopped = true
    for (const waiter of this.#waiting.splice(0)) waiter(null)
    for (const control of this.#byCommand.values()) control.runner?.kill('SIGKILL')
  }

  #releaser(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.#waiting.shift()
      if (next) next(this.#releaser())
      else this.#free += 1
    }
  }
}
