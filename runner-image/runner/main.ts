/**
 * The runner: one command, from its CommandSpec to a terminal status event.
 * This file is its entrypoint, in the runner image and as the local
 * executor's child process:
 *
 *   node dist/runner-image/runner/main.js [--phase fetch|run|fetch-run|upload] [--spec FILE|-|--await-spec FILE] [--work-dir DIR]
 *
 * A command runs in three phases, one folder each:
 *
 *   1. fetch/   checks the command against the ffmpeg policy, then brings its
 *               inputs into the work dir: HTTP inputs, or yt-dlp downloads.
 *               Network; no credential.
 *   2. run/     runs ffmpeg on them, checks every file to deliver was written,
 *               probes it. No credential.
 *   3. upload/  uploads those files and builds the SUCCESS event. The only
 *               phase that reads storage credentials.
 *
 * report/ is around every phase, not a phase: PROCESSING events (throttled)
 * while it runs, and the FAILED event of a phase that fails or phase 3's
 * SUCCESS, as JSON lines on stdout or to NATS JetStream
 * (FFKUBE_STATUS_REPORTER=nats).
 *
 * In a pod the Job's two containers (operator/job-builder.ts) run this file
 * together, `--phase fetch-run` and `--phase upload`; they hand over through
 * the work volume (phase-state.ts, hand-over.ts). In local mode one process
 * runs the three in a row: this file without --phase (one-shot), or
 * pool-worker.ts (warm, many commands).
 * phases.ts holds both orders. What every phase shares sits beside this file:
 * config.ts, spec.ts, phase-context.ts, phase-state.ts, produced-files.ts,
 * failure.ts, stderr-tail.ts.
 *
 * Reads the CommandSpec (JSON) from FILE, stdin (`-`), or, without --spec,
 * $FFKUBE_COMMAND_SPEC (a pod has no stdin) and falling back to stdin. With
 * --await-spec FILE (a pod created ahead of its command: awaited-spec.ts) it
 * first connects its reporter and loads what it can, then waits until FILE
 * holds the spec. Runs it
 * in DIR (default $FFKUBE_WORK_DIR). Exits 0 on SUCCESS or a finished phase
 * before the last, 1 on FAILED, 2 when it could not even report.
 */
import { mkdir, readFile } from 'node:fs/promises'
import type { Readable, Writable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { pino, type Logger } from 'pino'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { awaitSpecFile } from './awaited-spec.js'
import { readRunnerConfig, type RunnerConfig } from './config.js'
import { PHASES, runCommand, runCommandPhase, type Phase } from './phases.js'
import { JsonLinesReporter, type StatusReporter } from './report/reporter.js'
import { parseCommandSpec } from './spec.js'
import { preloadUploader } from './upload/upload-phase.js'
import { uploadTargetFor } from './upload/upload-target.js'

export interface MainIo {
  argv: string[]
  env: NodeJS.ProcessEnv
  stdin: Readable
  stdout: Writable
}

function option(argv: string[], name: string): string | undefined {
  const index = argv.indexOf(name)
  return index >= 0 ? argv[index + 1] : undefined
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
  return Buffer.concat(chunks).toString('utf8')
}

/** The spec's JSON: --spec FILE or - (stdin); without --spec, FFKUBE_COMMAND_SPEC, else stdin. */
async function readSpecJson(io: MainIo): Promise<string> {
  const path = option(io.argv, '--spec')
  if (path === undefined && io.env.FFKUBE_COMMAND_SPEC) return io.env.FFKUBE_COMMAND_SPEC
  return path === undefined || path === '-' ? readAll(io.stdin) : readFile(path, 'utf8')
}

/** Connects the status channel; the function it resolves with makes the command's reporter. */
async function openReporter(config: RunnerConfig, io: MainIo, logger: Logger, name: string): Promise<(commandId: string) => StatusReporter> {
  if (config.reporter === 'nats') {
    // Loaded only when used: the nats client adds ~80 ms to a start that local mode does not need.
    const { NatsReporter } = await import('./report/nats-reporter.js')
    return NatsReporter.open({ url: config.natsUrl as string, logger }, name)
  }
  return (commandId) => new JsonLinesReporter(commandId, io.stdout)
}

/** Runs the runner; returns the process exit code. */
export async function main(io: MainIo): Promise<number> {
  const logger = pino({ level: io.env.LOG_LEVEL ?? 'info', base: { component: 'runner' } }, pino.destination(2))
  let config: RunnerConfig
  try {
    config = readRunnerConfig(io.env)
  } catch (error) {
    logger.error({ err: error }, 'bad runner configuration')
    return 2
  }
  const phase = option(io.argv, '--phase')
  if (phase !== undefined && !(PHASES as readonly string[]).includes(phase)) {
    logger.error({ phase }, `--phase must be one of ${PHASES.join(', ')}`)
    return 2
  }
  const workDir = option(io.argv, '--work-dir') ?? io.env.FFKUBE_WORK_DIR
  if (!workDir) {
    logger.error('no work directory: pass --work-dir or set FFKUBE_WORK_DIR')
    return 2
  }
  try {
    // In a pod the root filesystem is read-only and TMPDIR/HOME point into the (empty) work volume.
    for (const dir of [io.env.TMPDIR, io.env.HOME]) if (dir) await mkdir(dir, { recursive: true })
  } catch (error) {
    logger.error({ err: error }, 'cannot create TMPDIR or HOME')
    return 2
  }
  const awaited = option(io.argv, '--await-spec')
  let opened: ((commandId: string) => StatusReporter) | undefined
  if (awaited !== undefined) {
    // Created ahead of its command: what does not need the command is done while there is none.
    if (phase === 'upload') preloadUploader()
    try {
      opened = await openReporter(config, io, logger, 'ffkube-runner-warm')
    } catch (error) {
      logger.error({ err: error }, 'cannot reach the status channel')
      return 2
    }
    logger.debug({ file: awaited }, 'waiting for a command')
  }
  let spec: CommandSpec
  try {
    spec = parseCommandSpec(awaited !== undefined ? await awaitSpecFile(awaited) : await readSpecJson(io))
  } catch (error) {
    logger.error({ err: error }, 'unreadable command spec')
    // An open NATS connection would keep the process alive: end it (a reporter of no command, never used).
    await opened?.('').close().catch(() => undefined)
    return 2
  }
  let reporter: StatusReporter
  try {
    reporter = (opened ?? (await openReporter(config, io, logger, `ffkube-runner-${spec.commandId}`)))(spec.commandId)
  } catch (error) {
    // Nothing can be reported; the executor sees exit code 2 and fails the command itself.
    logger.error({ err: error, command_id: spec.commandId }, 'cannot reach the status channel')
    return 2
  }
  try {
    const deps = { config, workDir, reporter, logger, uploadTarget: () => uploadTargetFor(spec, config, io.env) }
    const status = phase === undefined ? await runCommand(spec, deps) : await runCommandPhase(phase as Phase, spec, deps)
    return status === 'FAILED' ? 1 : 0
  } catch (error) {
    logger.error({ err: error, command_id: spec.commandId }, 'could not report the outcome')
    return 2
  } finally {
    await reporter.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main({ argv: process.argv.slice(2), env: process.env, stdin: process.stdin, stdout: process.stdout })
}
