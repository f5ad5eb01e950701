/**
 * Phase 3, upload (the Job's `upload` container, the only one that mounts the
 * storage credentials): uploads the files the command delivers and builds its
 * SUCCESS event. ffmpeg ran in this work dir before, so what is there is data,
 * never instructions: the files to upload come from the spec and phase 1's
 * record (produced-files.ts), each must be a regular file at its expected
 * path, and nothing else in the work dir is read.
 */
import type { CommandSpec } from '../../../contracts/command-spec.js'
import { mimeTypeForFilename, type MediaMeta } from '../../../contracts/output-file-meta.js'
import type { OutputFileResult } from '../../../contracts/status-events.js'
import { RunnerFailure } from '../failure.js'
import type { PhaseContext } from '../phase-context.js'
import type { Fetched, RunOutcome } from '../phase-state.js'
import { assertWritten, producedFiles, type ProducedFile } from '../produced-files.js'
import type { SuccessBody } from '../report/outcome.js'
import type { UploadTarget } from './upload-target.js'

export async function uploadPhase(spec: CommandSpec, fetched: Fetched, ran: RunOutcome, { deps, progress }: PhaseContext): Promise<SuccessBody> {
  const files = producedFiles(spec, fetched)
  await assertWritten(deps.workDir, files)
  progress.stage('UPLOADING')
  const outputFiles = await uploadOutputFiles(files, ran.metas, { commandId: spec.commandId, workDir: deps.workDir, target: deps.uploadTarget() })
  return { type: 'SUCCESS', output_files: outputFiles, ffmpeg_command_run_seconds: ran.runSeconds, failed_files: fetched.failedFiles }
}

/**
 * The AWS SDK takes ~180 ms to load. When one process runs every phase,
 * loading starts early (see preloadUploader) and overlaps phases 1 and 2,
 * instead of delaying the first status event.
 */
let uploader: Promise<typeof import('./s3-upload.js')> | null = null

export function preloadUploader(): void {
  if (uploader) return
  uploader = import('./s3-upload.js')
  // Observed here so a failed load is not an unhandled rejection; uploadOutputFiles awaits it and throws.
  uploader.catch(() => undefined)
}

/**
 * Uploads every file and joins each with its probe. `metas` may still be
 * arriving: probing overlaps the upload when one process runs both (the
 * upload's Content-Type comes from the extension, not the probe).
 */
async function uploadOutputFiles(
  files: readonly ProducedFile[],
  metas: Promise<Record<string, MediaMeta>>,
  context: { commandId: string; workDir: string; target: UploadTarget },
): Promise<Record<string, OutputFileResult>> {
  preloadUploader()
  const { uploadOutputs } = await (uploader as Promise<typeof import('./s3-upload.js')>)
  const uploading = uploadOutputs(
    context.target,
    context.commandId,
    context.workDir,
    files.map((file) => ({ ...file, contentType: mimeTypeForFilename(file.filename) })),
  )
  const [probed, keys] = await Promise.all([metas, uploading])
  return Object.fromEntries(
    files.map((file) => {
      const meta = probed[file.alias]
      if (!meta) throw new RunnerFailure('INTERNAL_ERROR', `no probe of ${file.alias} was recorded`)
      const result: OutputFileResult = {
        ...meta,
        filename: file.filename,
        storage_location: context.target.location,
        bucket: context.target.bucket,
        object_key: keys[file.alias] as string,
      }
      return [file.alias, result]
    }),
  )
}
