/** What every phase of a command is given: the runner's dependencies, its progress channel and its logger. */
import type { Logger } from 'pino'
import type { RunnerConfig } from './config.js'
import type { ProgressThrottle } from './report/progress-throttle.js'
import type { ToolLog } from './report/log-shipper.js'
import type { StatusReporter } from './report/reporter.js'
import type { UploadTarget } from './upload/upload-target.js'
import type { FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import type { Resolver } from '../../contracts/url-guard-fetch.js'

export interface RunDeps {
  config: RunnerConfig
  workDir: string
  reporter: StatusReporter
  logger: Logger
  /** Built when the upload phase needs it, so credentials are read only then. */
  uploadTarget: () => UploadTarget
  resolve?: Resolver
  /** Plans the command strings (contracts/ffmpeg-plan.ts); planFfmpegCommands, the policy's, unless the entry point chose another. */
  ffmpegPlanner?: FfmpegPlanner
}

export interface PhaseContext {
  deps: RunDeps
  progress: ProgressThrottle
  /** The tools' stderr, for the command's log (GET /commands/:id/logs). */
  logs: ToolLog
  /** Carries command_id. */
  log: Logger
}

/** The URL guard's options for this runner. */
export function guardOptions(deps: RunDeps): { allowPrivateNetworks: boolean; resolve?: Resolver } {
  return { allowPrivateNetworks: deps.config.allowPrivateNetworks, ...(deps.resolve ? { resolve: deps.resolve } : {}) }
}
