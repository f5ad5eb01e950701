/**
 * The policy's plan for a command, made by the runner itself: the argvs the
 * run phase executes and the outputs that write a folder of files (with their
 * main file). The run phase and the upload phase each make it afresh from the
 * spec (it is pure and cheap), so neither trusts an earlier process's verdict.
 */
import type { CommandSpec } from '../../contracts/command-spec.js'
import { inputPathsFor } from '../../contracts/ffmpeg-paths.js'
import type { WorkFileCheck } from '../../contracts/ffmpeg-work-files.js'
import { planFfmpegCommands, type FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import { RunnerFailure } from './failure.js'
import type { Fetched } from './phase-state.js'

export interface CommandPlan {
  /** null: a download-only batch runs no ffmpeg. */
  argvs: string[][] | null
  /** What the runner checks in the work dir before each command (folder entries, lists, subtitle files). */
  checks: WorkFileCheck[][]
  /** Folder output alias → its main file's name or pattern. */
  folders: Record<string, string>
}

/** `planner`: the policy's (RunDeps.ffmpegPlanner). */
export function planCommand(spec: CommandSpec, fetched: Fetched, planner: FfmpegPlanner = planFfmpegCommands): CommandPlan {
  if (spec.commandType !== 'YTDLP_COMMAND') {
    const folder = Boolean(spec.inputCompressedFolder)
    const plan = planner(spec.ffmpegCommands, { mode: 'ffmpeg', inputs: inputPathsFor(spec.inputFiles), outputs: spec.outputFiles, folder })
    if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
    return { argvs: plan.argvs, checks: plan.checks, folders: plan.folders }
  }
  const command = spec.ffmpegCommands[0]
  if (command === undefined) return { argvs: null, checks: [], folders: {} }
  const plan = planner([command], { mode: 'arguments', inputs: fetched.downloads ?? {}, outputs: spec.outputFiles })
  if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
  return { argvs: plan.argvs, checks: plan.checks, folders: plan.folders }
}
