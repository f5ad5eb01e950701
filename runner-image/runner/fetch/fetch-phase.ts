/**
 * Phase 1, fetch (the Job's `fetch` init container): checks the command
 * against the ffmpeg policy before a byte is fetched, then brings the inputs
 * into the work dir: HTTP inputs for FFmpeg types, yt-dlp downloads for
 * YTDLP_COMMAND. Network access, no storage credentials, no user arguments run:
 * the service's own storage_urls are presigned GETs, read without a credential.
 */
import { pendingDownloadPaths, inputPathsFor } from '../../../contracts/ffmpeg-paths.js'
import { planFfmpegCommands } from '../../../contracts/ffmpeg-plan.js'
import type { CommandSpec } from '../../../contracts/command-spec.js'
import { RunnerFailure } from '../failure.js'
import { fetchCompressedFolder } from './compressed-folder.js'
import { fetchInputs } from './inputs.js'
import { guardOptions, type PhaseContext } from '../phase-context.js'
import type { Fetched } from '../phase-state.js'
import { downloadAll } from './ytdlp-downloads.js'

export async function fetchPhase(spec: CommandSpec, context: PhaseContext): Promise<Fetched> {
  return spec.commandType === 'YTDLP_COMMAND' ? downloadPhase(spec, context) : fetchFfmpegInputs(spec, context)
}

async function fetchFfmpegInputs(spec: CommandSpec, { deps, progress }: PhaseContext): Promise<Fetched> {
  // The policy runs before any byte is fetched: a refused command costs nothing.
  const folder = Boolean(spec.inputCompressedFolder)
  const plan = (deps.ffmpegPlanner ?? planFfmpegCommands)(spec.ffmpegCommands, { mode: 'ffmpeg', inputs: inputPathsFor(spec.inputFiles), outputs: spec.outputFiles, folder })
  if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
  progress.stage('FETCHING')
  const config = deps.config
  const options = { ...guardOptions(deps), maxBytes: config.inputMaxBytes, timeoutMs: config.inputTimeoutMs }
  const managed = { storage: config.storage, aliases: spec.managedInputs ?? [] }
  // Inputs land in inputs/, the folder at the root (its entries may not use that name), so both arrive side by side.
  const results = await Promise.allSettled([fetchInputs(deps.workDir, spec.inputFiles, options, managed), fetchCompressedFolder(spec, deps.workDir, options, config.storage)])
  // The first failure decides the command; the other has settled before the work dir is removed.
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected')
  if (failed) throw failed.reason
  return { downloads: null, failedFiles: null }
}

async function downloadPhase(spec: CommandSpec, { deps, progress, logs }: PhaseContext): Promise<Fetched> {
  const ytdlp = spec.ytdlp
  if (!ytdlp) throw new RunnerFailure('INVALID_COMMAND', 'a YTDLP_COMMAND needs input_urls')
  const command = spec.ffmpegCommands[0]
  if (command !== undefined) {
    // Checked before downloading with extension-less paths; the run phase checks again with the real ones.
    const early = planFfmpegCommands([command], { mode: 'arguments', inputs: pendingDownloadPaths(Object.keys(ytdlp.inputUrls)), outputs: spec.outputFiles })
    if (!early.ok) throw new RunnerFailure('INVALID_COMMAND', early.violation.message)
  }
  progress.stage('DOWNLOADING')
  const config = deps.config
  const { downloaded, failed } = await downloadAll(ytdlp.inputUrls, {
    ytdlpPath: config.ytdlpPath,
    ffmpegPath: config.ffmpegPath,
    jsRuntimePath: process.execPath,
    workDir: deps.workDir,
    formatSelector: ytdlp.formatSelector,
    maxBytes: config.downloadMaxBytes,
    timeoutMs: config.downloadTimeoutMs,
    guard: guardOptions(deps),
    sandbox: config.sandbox,
    log: logs,
    cookiesFile: config.ytdlpCookiesFile,
  })
  const failedFiles = Object.keys(failed).length > 0 ? failed : null
  const firstFailure = Object.values(failed)[0]
  if (firstFailure && command === undefined && Object.keys(downloaded).length === 0) {
    // Download-only: SUCCESS when at least one URL arrived, failed_files for the rest.
    throw new RunnerFailure(firstFailure.error_status as RunnerFailure['errorStatus'], `every download failed; first: ${firstFailure.error_message}`, failedFiles)
  }
  if (firstFailure && command !== undefined) {
    // With post-processing: all or nothing.
    throw new RunnerFailure(firstFailure.error_status as RunnerFailure['errorStatus'], `a download failed, so ffmpeg did not run: ${firstFailure.error_message}`, failedFiles)
  }
  return { downloads: downloaded, failedFiles }
}
