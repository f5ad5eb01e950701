/** Probes and uploads a command's outputs, turning them into OutputFileResults. */
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { mimeTypeForFilename, type MediaMeta } from '../../contracts/output-file-meta.js'
import type { OutputFileResult } from '../../contracts/status-events.js'
import { RunnerFailure } from './failure.js'
import { probeFile } from './probe-step.js'
import type { UploadTarget } from './upload-step.js'

/**
 * The AWS SDK takes ~180 ms to load. Loading starts when the runner starts
 * (see preloadUploader) and overlaps the fetch and ffmpeg, instead of
 * delaying the first status event.
 */
let uploader: Promise<typeof import('./upload-step.js')> | null = null

export function preloadUploader(): void {
  if (uploader) return
  uploader = import('./upload-step.js')
  // Observed here so a failed load is not an unhandled rejection; deliverOutputs awaits it and throws.
  uploader.catch(() => undefined)
}

export interface ProducedFile {
  alias: string
  filename: string
  /** Relative to the work dir. */
  path: string
}

async function assertWritten(workDir: string, file: ProducedFile): Promise<void> {
  try {
    await stat(join(workDir, file.path))
  } catch {
    throw new RunnerFailure('OUTPUT_MISSING', `no command wrote ${file.alias} (${file.filename})`)
  }
}

export async function deliverOutputs(
  files: readonly ProducedFile[],
  context: { commandId: string; workDir: string; ffprobePath: string; target: UploadTarget; onUploading: () => Promise<void> },
): Promise<Record<string, OutputFileResult>> {
  // A missing output fails the command as OUTPUT_MISSING before anything is uploaded.
  for (const file of files) await assertWritten(context.workDir, file)
  // Probing and uploading then overlap: the upload's Content-Type comes from the extension, not the probe.
  const probing = Promise.all(files.map((file) => probeFile(context.ffprobePath, context.workDir, file.path)))
  await context.onUploading()
  preloadUploader()
  const { uploadOutputs } = await (uploader as Promise<typeof import('./upload-step.js')>)
  const uploading = uploadOutputs(
    context.target,
    context.commandId,
    context.workDir,
    files.map((file) => ({ ...file, contentType: mimeTypeForFilename(file.filename) })),
  )
  const [probed, keys] = await Promise.all([probing, uploading])
  const metas = new Map<string, MediaMeta>(files.map((file, index) => [file.alias, probed[index] as MediaMeta]))
  return Object.fromEntries(
    files.map((file) => [
      file.alias,
      {
        ...(metas.get(file.alias) as MediaMeta),
        filename: file.filename,
        storage_location: context.target.location,
        bucket: context.target.bucket,
        object_key: keys[file.alias] as string,
      },
    ]),
  )
}
