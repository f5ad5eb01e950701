/**
 * A command's outputs: checked and probed where ffmpeg ran (no credentials
 * there), then uploaded and turned into OutputFileResults by the upload phase.
 */
import { lstat } from 'node:fs/promises'
import { join, normalize } from 'node:path'
import { mimeTypeForFilename, type MediaMeta } from '../../contracts/output-file-meta.js'
import type { SandboxHost } from '../../contracts/sandbox.js'
import type { OutputFileResult } from '../../contracts/status-events.js'
import { RunnerFailure } from './failure.js'
import { startProbe } from './run/probes.js'
import type { UploadTarget } from './upload/s3-upload.js'

/**
 * The AWS SDK takes ~180 ms to load. When one process runs every phase,
 * loading starts early (see preloadUploader) and overlaps the fetch and
 * ffmpeg, instead of delaying the first status event.
 */
let uploader: Promise<typeof import('./upload/s3-upload.js')> | null = null

export function preloadUploader(): void {
  if (uploader) return
  uploader = import('./upload/s3-upload.js')
  // Observed here so a failed load is not an unhandled rejection; uploadOutputFiles awaits it and throws.
  uploader.catch(() => undefined)
}

export interface ProducedFile {
  alias: string
  filename: string
  /** Relative to the work dir. */
  path: string
}

/** Only fetched or declared files are ever delivered: `inputs/…` (downloads) or `outputs/…`, never a path out of the work dir. */
const DELIVERABLE = /^(?:inputs|outputs)\/[^/]+$/

/**
 * Every file exists as a regular file where it should: OUTPUT_MISSING
 * otherwise. A directory or a link in an output's place is treated as missing:
 * nothing but the bytes ffmpeg wrote at that name is read.
 */
export async function assertWritten(workDir: string, files: readonly ProducedFile[]): Promise<void> {
  for (const file of files) {
    const path = normalize(file.path)
    if (!DELIVERABLE.test(path)) throw new RunnerFailure('INTERNAL_ERROR', `${file.alias} is not a deliverable path`)
    let regular = false
    try {
      regular = (await lstat(join(workDir, path))).isFile()
    } catch {
      // Absent: reported below.
    }
    if (!regular) throw new RunnerFailure('OUTPUT_MISSING', `no command wrote ${file.alias} (${file.filename})`)
  }
}

/** At most this many probes wait at the gate at once (each holds an idle ffprobe); more outputs are probed when needed. */
const GATED_PROBES = 4

/**
 * Starts the probes of files ffmpeg has yet to write (see startProbe):
 * results() once every file is complete, or cancel() when ffmpeg failed.
 */
export function startProbes(
  files: readonly ProducedFile[],
  context: { workDir: string; ffprobePath: string; startGate: string | null; sandbox: SandboxHost | null },
): { results(): Promise<Record<string, MediaMeta>>; cancel(): void } {
  const probes = files.map((file, index) => startProbe(context.ffprobePath, context.workDir, file.path, index < GATED_PROBES ? context.startGate : null, context.sandbox))
  return {
    async results() {
      const probed = await Promise.all(probes.map((probe) => probe.result()))
      return Object.fromEntries(files.map((file, index) => [file.alias, probed[index] as MediaMeta]))
    },
    cancel: () => probes.forEach((probe) => probe.cancel()),
  }
}

/**
 * Uploads every file and joins each with its probe. `metas` may still be
 * arriving: probing overlaps the upload when one process runs both (the
 * upload's Content-Type comes from the extension, not the probe).
 */
export async function uploadOutputFiles(
  files: readonly ProducedFile[],
  metas: Promise<Record<string, MediaMeta>>,
  context: { commandId: string; workDir: string; target: UploadTarget },
): Promise<Record<string, OutputFileResult>> {
  preloadUploader()
  const { uploadOutputs } = await (uploader as Promise<typeof import('./upload/s3-upload.js')>)
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
