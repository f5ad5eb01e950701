import { ApiError } from '../client/index.js'

/** The exit codes, as `ffkube --help` states them. */
export const EXIT = {
  /** The command (or request) succeeded. */
  OK: 0,
  /** The command ran and ended FAILED. */
  FAILED: 1,
  /** Bad arguments or configuration: nothing was sent, or the API could not be told what was meant. */
  USAGE: 2,
  /** The API answered an error, or could not be reached. */
  API: 3,
  /** Ctrl-C: the command keeps running on the service. */
  INTERRUPTED: 130,
} as const

/** An error the CLI reports as one line, with its exit code. */
export class CliError extends Error {
  override readonly name: string = 'CliError'

  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message)
  }
}

/** Arguments or configuration the CLI cannot act on (exit 2). */
export class UsageError extends CliError {
  override readonly name = 'UsageError'

  constructor(message: string) {
    super(message, EXIT.USAGE)
  }
}

/** What fetch threw, down to the system error that explains it (`connect ECONNREFUSED 127.0.0.1:9`). */
function networkReason(error: Error): string {
  let reason = error.message
  let cause: unknown = error.cause
  while (cause instanceof Error) {
    reason = cause.message || reason
    cause = cause.cause
  }
  return reason
}

/** Any error as the line the user reads and the exit code. `baseUrl` names the service in a network error. */
export function describeError(error: unknown, baseUrl: string | null): { message: string; exitCode: number } {
  if (error instanceof CliError) return { message: error.message, exitCode: error.exitCode }
  if (error instanceof ApiError) {
    const said = `${error.status} ${error.code}: ${error.message}`
    if (error.status === 401) {
      return { message: `the API refused the key (${said}); set FFKUBE_API_KEY or run \`ffkube config set api-key <key>\``, exitCode: EXIT.API }
    }
    if (error.status === 429) {
      const wait = error.retryAfterSeconds === null ? '' : `; retry after ${error.retryAfterSeconds} s`
      return { message: `rate limited (${said})${wait}`, exitCode: EXIT.API }
    }
    return { message: `the API refused the request (${said})`, exitCode: EXIT.API }
  }
  // fetch's own failure: a TypeError whose cause is the socket's error.
  if (error instanceof TypeError && error.message === 'fetch failed') {
    return { message: `cannot reach ${baseUrl ?? 'the service'}: ${networkReason(error)}`, exitCode: EXIT.API }
  }
  if (error instanceof Error && error.name === 'AbortError') return { message: 'interrupted', exitCode: EXIT.INTERRUPTED }
  return { message: error instanceof Error ? error.message : String(error), exitCode: EXIT.API }
}
