import type { FailedFile, RunnerErrorStatus } from '../../contracts/status-events.js'

/** A command that ends FAILED for a reason worth telling the user; anything else is INTERNAL_ERROR. */
export class RunnerFailure extends Error {
  override readonly name = 'RunnerFailure'
  constructor(
    readonly errorStatus: RunnerErrorStatus,
    message: string,
    readonly failedFiles: Record<string, FailedFile> | null = null,
  ) {
    super(message)
  }
}
