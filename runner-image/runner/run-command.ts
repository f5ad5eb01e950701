/**
 * Runs one command from its spec to a terminal status event:
 *   FFmpeg types: check the policy → fetch inputs → ffmpeg → probe → upload.
 *   YTDLP_COMMAND: download each URL → (optionally) ffmpeg → probe → upload.
 * Every expected failure becomes a FAILED event with an error_status; an
 * unexpected one becomes INTERNAL_ERROR with its details in the log only.
 */
import { mkdir } from 'node:fs/promises'
import { extname, join } from 'node:path'
import type { Logger } from 'pino'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { inputPathsFor, pendingDownloadPaths } from '../../contracts/ffmpeg-paths.js'
import { planFfmpegCommands } from '../../contracts/ffmpeg-plan.js'
import type { FailedFile, OutputFileResult, ProcessingStage, StatusEventBody } from '../../contracts/status-events.js'
import type { RunnerConfig } from './config.js'
import { fetchInputs } from './fetch-inputs.js'
import { runFfmpegCommands } from './ffmpeg-step.js'
import { RunnerFailure } from './failure.js'
import { deliverOutputs, preloadUploader, type ProducedFile } from './outputs-step.js'
import type { StatusReporter } from './reporter.js'
import type { UploadTarget } from './upload-step.js'
import { downloadAll } from './ytdlp-step.js'
import type { Resolver } from '../../contracts/url-guard-fetch.js'

export interface RunDeps {
  config: RunnerConfig
  workDir: string
  reporter: StatusReporter
  logger: Logger
  /** Built when the upload step needs it, so credentials are read only then. */
  uploadTarget: () => UploadTarget
  resolve?: Resolver
}

interface Completed {
  outputFiles: Record<string, OutputFileResult>
  runSeconds: number | null
  failedFiles: Record<string, FailedFile> | null
}

/** Runs the command and reports its outcome; returns the terminal status. */
export async function runCommand(spec: CommandSpec, deps: RunDeps): Promise<'SUCCESS' | 'FAILED'> {
  const log = deps.logger.child({ command_id: spec.commandId })
  const progress = new ProgressThrottle(deps.reporter, log)
  let terminal: StatusEventBody
  try {
    await mkdir(join(deps.workDir, 'outputs'), { recursive: true })
    const done = spec.commandType === 'YTDLP_COMMAND' ? await runYtdlpCommand(spec, deps, progress) : await runFfmpegCommand(spec, deps, progress)
    terminal = { type: 'SUCCESS', output_files: done.outputFiles, ffmpeg_command_run_seconds: done.runSeconds, failed_files: done.failedFiles }
    log.info({ ffmpeg_command_run_seconds: done.runSeconds }, 'command succeeded')
  } catch (error) {
    if (error instanceof RunnerFailure) {
      terminal = { type: 'FAILED', error_status: error.errorStatus, error_message: error.message, ffmpeg_command_run_seconds: null, failed_files: error.failedFiles }
      log.info({ error_status: error.errorStatus, error_message: error.message }, 'command failed')
    } else {
      terminal = { type: 'FAILED', error_status: 'INTERNAL_ERROR', error_message: 'the runner failed unexpectedly', ffmpeg_command_run_seconds: null, failed_files: null }
      log.error({ err: error }, 'runner failed unexpectedly')
    }
  }
  await progress.flush()
  await deps.reporter.report(terminal)
  return terminal.type === 'SUCCESS' ? 'SUCCESS' : 'FAILED'
}

async function runFfmpegCommand(spec: CommandSpec, deps: RunDeps, progress: ProgressThrottle): Promise<Completed> {
  // The policy runs before any byte is fetched: a refused command costs nothing.
  const plan = planFfmpegCommands(spec.ffmpegCommands, { mode: 'ffmpeg', inputs: inputPathsFor(spec.inputFiles), outputs: spec.outputFiles })
  if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
  progress.stage('FETCHING')
  // The storage SDK loads while inputs arrive (network-bound), not while ffmpeg is timed.
  preloadUploader()
  await fetchInputs(deps.workDir, spec.inputFiles, guardOptions(deps, deps.config.inputMaxBytes, deps.config.inputTimeoutMs))
  const runSeconds = await runFfmpeg(plan.argvs, deps, progress)
  const outputFiles = await deliver(declaredOutputs(spec.outputFiles), spec, deps, progress)
  return { outputFiles, runSeconds, failedFiles: null }
}

async function runYtdlpCommand(spec: CommandSpec, deps: RunDeps, progress: ProgressThrottle): Promise<Completed> {
  const ytdlp = spec.ytdlp
  if (!ytdlp) throw new RunnerFailure('INVALID_COMMAND', 'a YTDLP_COMMAND needs input_urls')
  const command = spec.ffmpegCommands[0]
  const outputs = spec.outputFiles
  if (command !== undefined) {
    // Checked before downloading with extension-less paths; the real paths are known after.
    const early = planFfmpegCommands([command], { mode: 'arguments', inputs: pendingDownloadPaths(Object.keys(ytdlp.inputUrls)), outputs })
    if (!early.ok) throw new RunnerFailure('INVALID_COMMAND', early.violation.message)
  }
  progress.stage('DOWNLOADING')
  preloadUploader()
  const config = deps.config
  const { downloaded, failed } = await downloadAll(ytdlp.inputUrls, {
    ytdlpPath: config.ytdlpPath,
    ffmpegPath: config.ffmpegPath,
    workDir: deps.workDir,
    formatSelector: ytdlp.formatSelector,
    maxBytes: config.downloadMaxBytes,
    timeoutMs: config.downloadTimeoutMs,
    guard: { allowPrivateNetworks: config.allowPrivateNetworks, ...(deps.resolve ? { resolve: deps.resolve } : {}) },
  })
  const failedFiles = Object.keys(failed).length > 0 ? failed : null
  const firstFailure = Object.values(failed)[0]
  if (command === undefined) {
    // Download-only: SUCCESS when at least one URL arrived, failed_files for the rest.
    if (Object.keys(downloaded).length === 0 && firstFailure) {
      throw new RunnerFailure(firstFailure.error_status as RunnerFailure['errorStatus'], `every download failed; first: ${firstFailure.error_message}`, failedFiles)
    }
    const files: ProducedFile[] = Object.entries(downloaded).map(([alias, path]) => {
      const suffix = alias.replace(/^in_/, '')
      return { alias: `out_${suffix}`, filename: `${suffix}${extname(path)}`, path }
    })
    return { outputFiles: await deliver(files, spec, deps, progress), runSeconds: null, failedFiles }
  }
  // With post-processing: all or nothing.
  if (firstFailure) {
    throw new RunnerFailure(firstFailure.error_status as RunnerFailure['errorStatus'], `a download failed, so ffmpeg did not run: ${firstFailure.error_message}`, failedFiles)
  }
  const plan = planFfmpegCommands([command], { mode: 'arguments', inputs: downloaded, outputs })
  if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
  const runSeconds = await runFfmpeg(plan.argvs, deps, progress)
  return { outputFiles: await deliver(declaredOutputs(outputs), spec, deps, progress), runSeconds, failedFiles: null }
}

function declaredOutputs(outputs: Record<string, string>): ProducedFile[] {
  return Object.entries(outputs).map(([alias, filename]) => ({ alias, filename, path: `outputs/${filename}` }))
}

function guardOptions(deps: RunDeps, maxBytes: number, timeoutMs: number) {
  return { allowPrivateNetworks: deps.config.allowPrivateNetworks, maxBytes, timeoutMs, ...(deps.resolve ? { resolve: deps.resolve } : {}) }
}

async function runFfmpeg(argvs: string[][], deps: RunDeps, progress: ProgressThrottle): Promise<number> {
  progress.stage('RUNNING')
  return runFfmpegCommands(argvs, {
    ffmpegPath: deps.config.ffmpegPath,
    workDir: deps.workDir,
    timeoutMs: deps.config.ffmpegTimeoutMs,
    onProgress: (percent) => progress.percent(percent),
  })
}

async function deliver(files: ProducedFile[], spec: CommandSpec, deps: RunDeps, progress: ProgressThrottle) {
  progress.stage('PROBING')
  return deliverOutputs(files, {
    commandId: spec.commandId,
    workDir: deps.workDir,
    ffprobePath: deps.config.ffprobePath,
    target: deps.uploadTarget(),
    onUploading: async () => progress.stage('UPLOADING'),
  })
}

/**
 * Sends PROCESSING events in order without making a step wait for NATS, and
 * at most one per 5 % of progress. A lost progress event is only logged.
 */
class ProgressThrottle {
  private chain: Promise<void> = Promise.resolve()
  private current: ProcessingStage = 'FETCHING'
  private last = -1

  constructor(private readonly reporter: StatusReporter, private readonly log: Logger) {}

  stage(stage: ProcessingStage): void {
    this.current = stage
    this.send({ type: 'PROCESSING', stage, progress: null })
  }

  percent(percent: number): void {
    if (percent < this.last + 5) return
    this.last = percent
    this.send({ type: 'PROCESSING', stage: this.current, progress: percent })
  }

  flush(): Promise<void> {
    return this.chain
  }

  private send(body: StatusEventBody): void {
    this.chain = this.chain.then(() => this.reporter.report(body)).catch((error: unknown) => this.log.warn({ err: error }, 'progress event lost'))
  }
}
