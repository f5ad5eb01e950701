/**
 * Phase 2 (run): runs the command's ffmpeg argvs in order in the work
 * directory, stopping at the first failure, reporting progress, and measuring
 * the time spent in ffmpeg only (ffmpeg_command_run_seconds).
 */
import { commandPercent, parseDurationLine, ProgressReader } from './ffmpeg-progress.js'
import type { WorkFileCheck } from '../../../contracts/ffmpeg-work-files.js'
import type { SandboxHost } from '../../../contracts/sandbox.js'
import { runTool } from '../../../contracts/tool-process.js'
import { RunnerFailure } from '../failure.js'
import { lastLines } from '../stderr-tail.js'
import type { ToolLog } from '../report/log-shipper.js'
import { checkWorkFiles } from './work-file-checks.js'

export interface FfmpegRunOptions {
  ffmpegPath: string
  workDir: string
  /** For the whole sequence. */
  timeoutMs: number
  /** The jail ffmpeg runs in, without network; null: none (a runner pod). */
  sandbox?: SandboxHost | null
  /** The policy's work-dir checks for each argv, made right before it runs (absent: none). */
  checks?: readonly (readonly WorkFileCheck[])[]
  onProgress: (percent: number) => void
  /** ffmpeg's stderr, one labelled step per command string, for the command's log. */
  log?: ToolLog
  now?: () => number
  /** Kills the running ffmpeg and starts no other when aborted (file-count-watch.ts). */
  signal?: AbortSignal
}

/** The runner's own progress channel, placed before the policy's argv. */
export const PROGRESS_OPTIONS: readonly string[] = ['-progress', 'pipe:1', '-nostats']

/** Runs every argv; returns the seconds spent in ffmpeg. Throws RunnerFailure. */
export async function runFfmpegCommands(argvs: readonly string[][], options: FfmpegRunOptions): Promise<number> {
  const now = options.now ?? (() => performance.now())
  const deadline = now() + options.timeoutMs
  let runSeconds = 0
  for (const [index, argv] of argvs.entries()) {
    await checkWorkFiles(options.workDir, options.checks?.[index] ?? [])
    const reader = new ProgressReader()
    let duration: number | null = null
    let stderrHead = ''
    const remaining = Math.max(deadline - now(), 1)
    options.log?.step(argvs.length > 1 ? `ffmpeg: command ${index + 1} of ${argvs.length}` : 'ffmpeg')
    const run = await runTool(options.ffmpegPath, [...PROGRESS_OPTIONS, ...argv], {
      cwd: options.workDir,
      timeoutMs: remaining,
      sandbox: { host: options.sandbox ?? null, network: 'none' },
      now,
      signal: options.signal,
      onStderr: (chunk) => {
        options.log?.write(chunk)
        if (duration !== null || stderrHead.length > 64_000) return
        stderrHead += chunk
        duration = parseDurationLine(stderrHead)
      },
      onStdout: (chunk) => {
        const seconds = reader.update(chunk)
        if (seconds === null) return
        const percent = commandPercent(index, argvs.length, seconds, duration)
        if (percent !== null) options.onProgress(percent)
      },
    })
    runSeconds += run.seconds
    const which = argvs.length > 1 ? `command ${index + 1}: ` : ''
    if (run.timedOut) {
      throw new RunnerFailure('FFMPEG_TIMEOUT', `${which}ffmpeg did not finish within ${Math.round(options.timeoutMs / 1000)} s`)
    }
    if (run.code !== 0) {
      throw new RunnerFailure('FFMPEG_FAILED', `${which}ffmpeg exited with ${run.code ?? run.signal}: ${lastLines(run.stderr)}`)
    }
  }
  return runSeconds
}
