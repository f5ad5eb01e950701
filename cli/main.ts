#!/usr/bin/env node
/**
 * `ffkube`: the command-line client of the media API (package.json "bin";
 * `npx ffkube` once `npx tsc` has built dist/). Ctrl-C stops following a
 * command and leaves it running; a second Ctrl-C exits at once.
 */
import { CommanderError } from 'commander'
import { processContext } from './context.js'
import { describeError, EXIT } from './errors.js'
import { buildProgram } from './program.js'

async function main(argv: readonly string[]): Promise<number> {
  const interrupt = new AbortController()
  process.on('SIGINT', () => {
    if (interrupt.signal.aborted) process.exit(EXIT.INTERRUPTED)
    interrupt.abort()
  })
  const context = processContext(interrupt.signal)
  let code: number = EXIT.OK
  const program = buildProgram(context, (result) => (code = result))
  try {
    if (argv.length === 0) {
      program.outputHelp()
      return EXIT.USAGE
    }
    await program.parseAsync(argv, { from: 'user' })
    return code
  } catch (error) {
    // --help and --version "fail" with code 0; commander has already printed its usage errors.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE
    const { message, exitCode } = describeError(error, context.baseUrl)
    context.err(`ffkube: ${message}\n`)
    return exitCode
  }
}

// `ffkube list | head`: once the reader has gone there is nobody left to tell; stop quietly, as Unix tools do.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error
  process.exit(process.exitCode ?? EXIT.OK)
})

process.exitCode = await main(process.argv.slice(2))
