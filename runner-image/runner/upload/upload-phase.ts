/**
 * Phase 3, upload (the Job's `upload` container, the only one that mounts the
 * storage credentials): uploads the files the command delivers and builds its
 * SUCCESS event. ffmpeg ran in this work dir before, so what is there is data,
 * never instructions: the files to upload come from the spec and the fetch
 * phase's record (produced-files.ts), each must be a regular file at its
 * expected path, and nothing else in the work dir is read.
 */
import type { CommandSpec } from '../../../contracts/command-spec.js'
import type { SuccessEvent } from '../../../contracts/status-events.js'
import { assertWritten, uploadOutputFiles } from '../outputs-step.js'
import type { PhaseContext } from '../phase-context.js'
import type { Fetched } from '../phase-state.js'
import { producedFiles } from '../produced-files.js'
import type { RunOutcome } from '../run/run-phase.js'

export type SuccessBody = Omit<SuccessEvent, 'command_id' | 'event_id' | 'emitted_at'>

export async function uploadPhase(spec: CommandSpec, fetched: Fetched, ran: RunOutcome, { deps, progress }: PhaseContext): Promise<SuccessBody> {
  const files = producedFiles(spec, fetched)
  await assertWritten(deps.workDir, files)
  progress.stage('UPLOADING')
  const outputFiles = await uploadOutputFiles(files, ran.metas, { commandId: spec.commandId, workDir: deps.workDir, target: deps.uploadTarget() })
  return { type: 'SUCCESS', output_files: outputFiles, ffmpeg_command_run_seconds: ran.runSeconds, failed_files: fetched.failedFiles }
}
