import { execFile } from 'node:child_process'

/** Options of one command run. */
export interface RunOptions {
  input?: string
  env?: NodeJS.ProcessEnv
  /** Resolve with the output even when the command fails (for best-effort cleanup). */
  allowFailure?: boolean
}

/** Runs a command to completion; resolves with its stdout, rejects with its stderr. */
export function run(command: string, args: string[], opts: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { env: opts.env ?? process.env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err && !opts.allowFailure) {
        reject(new Error(`${command} ${args.join(' ')} failed: ${stderr || err.message}`))
        return
      }
      resolve(stdout)
    })
    if (opts.input !== undefined) child.stdin?.end(opts.input)
    else child.stdin?.end()
  })
}
