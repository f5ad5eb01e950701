import type { CommandSpec } from '../../contracts/command-spec.js'
import type { Executor } from './executor.js'

/**
 * Stands in until the runner issue brings the local and Kubernetes
 * executors: every hand-off fails, so accepted commands stay QUEUED with
 * their dispatch pending (retried with backoff) and flow as soon as a real
 * executor replaces this one. Nothing is dropped in the meantime.
 */
export class UnavailableExecutor implements Executor {
  constructor(readonly name: string) {}

  async execute(spec: CommandSpec): Promise<void> {
    throw new Error(`no ${this.name} executor is available yet; command ${spec.commandId} stays queued`)
  }
}
