/**
 * Phase 2, run (the Job's `ffmpeg` init container): runs the user's ffmpeg
 * arguments on what the fetch phase brought, checks that every file to
 * deliver exists and probes it. This phase holds no credential: its container
 * gets no Secret and no token, and ffmpeg and ffprobe run with PATH only.
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { CommandSpec } from '../../../contracts/command-spec.js'
import type { WorkFileCheck } from '../../../contracts/ffmpeg-work-files.js'
import { inputPathsFor } from '../../../contracts/ffmpeg-paths.js'
import { planFfmpegCommands, unpolicedArgvsForTests } from '../../../contracts/ffmpeg-plan.js'
import { RunnerFailure } from '../failure.js'
import { runFfmpegCommands } from './ffmpeg.js'
import type { PhaseContext } from '../phase-context.js'
import type { Fetched, RunOutcome } from '../phase-state.js'
import { assertWritten, producedFiles } from '../produced-files.js'
import { probeFiles } from './probes.js'

export async function runPhase(spec: CommandSpec, fetched: Fetched, context: PhaseContext): Promise<RunOutcome> {
  const { deps, progress } = context
  await mkdir(join(deps.workDir, 'outputs'), { recursive: true })
  const plan = deps.unsafeDisableFfmpegPolicyForTests && spec.commandType !== 'YTDLP_COMMAND' ? unpolicedPlan(spec) : plannedArgvs(spec, fetched)
  const files = producedFiles(spec, fetched)
  const runSeconds = plan === null ? null : await runFfmpeg(plan, context)
  progress.stage('PROBING')
  // A missing output fails the command as OUTPUT_MISSING here, before anything is uploaded.
  await assertWritten(deps.workDir, files)
  const metas = probeFiles(files, { workDir: deps.workDir, ffprobePath: deps.config.ffprobePath, sandbox: deps.config.sandbox })
  // Observed so a rejection before the caller awaits it is not unhandled; the caller still sees it.
  metas.catch(() => undefined)
  return { runSeconds, metas }
}

/** The argvs to run and the work-dir checks before each. */
interface RunPlan {
  argvs: string[][]
  checks: WorkFileCheck[][]
}

/**
 * The policy's argvs for this command (null: a download-only batch runs no
 * ffmpeg), checked again here: the run phase trusts no earlier process's verdict.
 */
function plannedArgvs(spec: CommandSpec, fetched: Fetched): RunPlan | null {
  if (spec.commandType !== 'YTDLP_COMMAND') {
    const folder = Boolean(spec.inputCompressedFolder)
    const plan = planFfmpegCommands(spec.ffmpegCommands, { mode: 'ffmpeg', inputs: inputPathsFor(spec.inputFiles), outputs: spec.outputFiles, folder })
    if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
    return plan
  }
  const command = spec.ffmpegCommands[0]
  if (command === undefined) return null
  const plan = planFfmpegCommands([command], { mode: 'arguments', inputs: fetched.downloads ?? {}, outputs: spec.outputFiles })
  if (!plan.ok) throw new RunnerFailure('INVALID_COMMAND', plan.violation.message)
  return plan
}

/** TESTS ONLY (RunDeps.unsafeDisableFfmpegPolicyForTests): the strings as they are, placeholders resolved. */
function unpolicedPlan(spec: CommandSpec): RunPlan {
  const argvs = unpolicedArgvsForTests(spec.ffmpegCommands, { mode: 'ffmpeg', inputs: inputPathsFor(spec.inputFiles), outputs: spec.outputFiles })
  return { argvs, checks: [] }
}

async function runFfmpeg({ argvs, checks }: RunPlan, { deps, progress, logs }: PhaseContext): Promise<number> {
  progress.stage('RUNNING')
  return runFfmpegCommands(argvs, {
    checks,
    ffmpegPath: deps.config.ffmpegPath,
    workDir: deps.workDir,
    timeoutMs: deps.config.ffmpegTimeoutMs,
    sandbox: deps.config.sandbox,
    onProgress: (percent) => progress.percent(percent),
    log: logs,
  })
}
