/**
 * The policy's plan for a command, made by the runner itself: the argvs the
 * run phase executes and the outputs that write a folder of files (with their
 * main file). The run phase and the upload phase each make it afresh from the
 * spec (it is pure and cheap), so neither trusts an earlier process's verdict.
 */
import type { CommandSpec } from '../../contracts/command-spec.js'
import { inputPathsFor } from '../../contracts/ffmpeg-paths.js'
import { planFfmpegCommands, unpolicedArgvsForTests } from '../../contracts/ffmpeg-plan.js'
import { isFolderOutput } from '../../contracts/output-patterns.js'
import { RunnerFailure } from './failure.js'
import type { Fetched } from './phase-state.js'

export interface CommandPlan {
  /** null: a download-only batch runs no ffmpeg. */
  argvs: string[][] | null
  /** Folder output alias → its main file's name or pattern. */
  folders: Record<string, string>
}

/** `unpoliced`: TESTS ONLY (RunDeps.unsafeDisableFfmpegPolicyForTests). */
export function planCommand(spec: CommandSpec, fetched: Fetched, unpoliced = false): CommandPlan {
  if (unpoliced && spec.commandType !== 'YTDLP_COMMAND') {
    const argvs = unpolicedArgvsForTests(spec.ffmpegCommands, { mode: 'ffmpeg', inputs: inputPathsFor(spec.inputFiles), outputs: spec.outputFiles })
    const folders = Object.fromEntries(Object.entries(spec.outputFiles).filter(([, filename]) => isFolderOutput(filename)))
    return { argvs, folders }
  }
  if (spec.commandType !== 'YTDLP_COMMAND') {
    const plan = planFfmpegCommands(spec.ffmpegCommands, { mode: 'ffmpeg', inputs: inputPathsFor(spec.inputFiles), outputs: spec.outputFiles })
    if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
    return { argvs: plan.argvs, folders: plan.folders }
  }
  const command = spec.ffmpegCommands[0]
  if (command === undefined) return { argvs: null, folders: {} }
  const plan = planFfmpegCommands([command], { mode: 'arguments', inputs: fetched.downloads ?? {}, outputs: spec.outputFiles })
  if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
  return { argvs: plan.argvs, folders: plan.folders }
}
