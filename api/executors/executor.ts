import type { CommandSpec } from '../../contracts/command-spec.js'

/**
 * Where the outbox dispatcher hands accepted commands: the local executor runs
 * the runner as a child process, the Kubernetes executor creates a
 * MediaCommand. `execute` must be idempotent: the dispatcher retries until it
 * succeeds, so the same command may arrive twice and must run once.
 */
export interface Executor {
  readonly name: string
  execute(spec: CommandSpec): Promise<void>
}
