/**
 * Phase 3, upload (the Job's `upload` container, the only one that mounts the
 * storage credentials): uploads the files the command delivers and builds its
 * SUCCESS event. ffmpeg ran in this work dir before, so what is there is data,
 * never instructions: the files to upload come from the spec, its plan (made
 * again here) and phase 1's record (produced-files.ts), each single file must
 * be a regular file at its expected path, each folder output's folder is
 * walked again (regular files only, the file-count cap checked again), and
 * nothing else in the work dir is read. Outputs the spec asks zipped
 * (compressOutputs) are zipped here, after those checks (output-zips.ts).
 */
import { lstat } from 'node:fs/promises'
import { join } from 'node:path'
import type { CommandSpec } from '../../../contracts/command-spec.js'
import type { CompressOutputs } from '../../../contracts/compressed-outputs.js'
import { objectKey, objectKeyProblem } from '../../../contracts/object-keys.js'
import { mimeTypeForFilename, type MediaMeta } from '../../../contracts/output-file-meta.js'
import type { OutputFileResult } from '../../../contracts/status-events.js'
import { storageRoomRefusal } from '../../../contracts/storage-room.js'
import { planCommand } from '../command-plan.js'
import { RunnerFailure } from '../failure.js'
import type { PhaseContext } from '../phase-context.js'
import type { Fetched, RunOutcome } from '../phase-state.js'
import { collectOutputs, maxOutputFiles, producedFiles, type CollectedOutput } from '../produced-files.js'
import type { SuccessBody } from '../report/outcome.js'
import { planZips, removeZips, writeZip, type OutputZip } from './output-zips.js'
import type { EarlierUploads, FileToUpload } from './s3-upload.js'
import type { UploadTarget } from './upload-target.js'

/** `earlier`: what one process running every phase stored while ffmpeg ran (pre-uploads.ts). */
export async function uploadPhase(spec: CommandSpec, fetched: Fetched, ran: RunOutcome, { deps, progress }: PhaseContext, earlier: EarlierUploads | null = null): Promise<SuccessBody> {
  const plan = planCommand(spec, fetched, deps.ffmpegPlanner)
  const collected = await collectOutputs(deps.workDir, producedFiles(spec, fetched, plan.folders), maxOutputFiles(spec))
  progress.stage('UPLOADING')
  const outputFiles = await uploadOutputFiles(collected, ran.metas, {
    commandId: spec.commandId,
    workDir: deps.workDir,
    target: deps.uploadTarget(),
    compress: spec.compressOutputs,
    earlier,
    roomBytes: spec.storageRoomBytes,
  })
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

/** The storage module, loaded once. */
export function loadUploader(): Promise<typeof import('./s3-upload.js')> {
  preloadUploader()
  return uploader as Promise<typeof import('./s3-upload.js')>
}

/**
 * Every object to store, under its name in the command's folder: a single
 * file's filename, a folder output's paths relative to its folder. Two
 * outputs that would be stored under one name fail the command before anything is stored.
 */
export function objectsToStore(collected: readonly CollectedOutput[]): FileToUpload[] {
  return distinctNames(
    collected.flatMap(({ file, members }) =>
      members === null
        ? [{ alias: file.alias, filename: file.filename, path: file.path, contentType: mimeTypeForFilename(file.filename) }]
        : members.map((member) => ({ alias: file.alias, filename: member.relative, path: member.path, contentType: mimeTypeForFilename(member.relative) })),
    ),
  )
}

/** `files`, unless two would be stored under one name (OUTPUT_NAME_CONFLICT). */
function distinctNames(files: FileToUpload[]): FileToUpload[] {
  const owner = new Map<string, string>()
  for (const { alias, filename } of files) {
    const other = owner.get(filename)
    if (other !== undefined) {
      throw new RunnerFailure('OUTPUT_NAME_CONFLICT', `${other === alias ? alias : `${other} and ${alias}`} would both be stored as ${filename}; give the outputs distinct filenames`)
    }
    owner.set(filename, alias)
  }
  return files
}

/**
 * `files`, unless one would be stored under a key over S3's 1,024 bytes
 * (OUTPUT_KEY_TOO_LONG), checked before anything is stored: some stores
 * refuse such a key midway through the upload, others keep it (ADR 0007).
 */
export function keysWithinLimit(files: FileToUpload[], prefix: string, commandId: string): FileToUpload[] {
  for (const { alias, filename } of files) {
    const problem = objectKeyProblem(objectKey(prefix, commandId, filename))
    if (problem !== null) throw new RunnerFailure('OUTPUT_KEY_TOO_LONG', `${alias}: ${filename} cannot be stored: ${problem}; give it a shorter name`)
  }
  return files
}

const BYTES_PER_MB = 1024 * 1024
const ZIP_MIME = 'application/zip'

/** What output_files says of a zip: a single file of type other, no media fields, its own size. */
function zipResult(zip: OutputZip, sizeBytes: number, key: string, target: UploadTarget): OutputFileResult {
  return {
    ...NO_MEDIA,
    size_mbytes: Math.round((sizeBytes / BYTES_PER_MB) * 1e6) / 1e6,
    file_type: 'other',
    file_format: 'zip',
    mime_type: ZIP_MIME,
    filename: zip.filename,
    storage_location: target.location,
    bucket: target.bucket,
    object_key: key,
  }
}

const NO_MEDIA: MediaMeta = {
  size_mbytes: null, duration: null, file_type: null, file_format: null, codec: null, pixel_format: null, mime_type: null,
  width: null, height: null, frame_rate: null, bitrate_video_kb: null, bitrate_audio_kb: null, sample_rate: null, channels: null,
}

/**
 * Uploads every file and joins each output with its probe. `metas` may still
 * be arriving: probing overlaps the upload when one process runs both (the
 * upload's Content-Type comes from the extension, not the probe). Outputs
 * the spec asks zipped are written into zips first (output-zips.ts) and the
 * zips stored instead of their files; the zips are removed afterwards.
 */
async function uploadOutputFiles(
  collected: readonly CollectedOutput[],
  metas: Promise<Record<string, MediaMeta>>,
  context: { commandId: string; workDir: string; target: UploadTarget; compress: CompressOutputs | undefined; earlier: EarlierUploads | null; roomBytes: number | undefined },
): Promise<Record<string, OutputFileResult>> {
  // Names are checked across every output even when all are zipped: outputs.zip lays them out as the bucket would.
  const allFiles = objectsToStore(collected)
  const { zips, plain } = planZips(collected, context.compress, allFiles)
  const storedAsIs = new Set(plain.map(({ file }) => file.alias))
  const objects = keysWithinLimit(
    distinctNames([
      ...allFiles.filter((file) => storedAsIs.has(file.alias)),
      ...zips.map((zip) => ({ alias: zip.alias, filename: zip.filename, path: zip.path, contentType: ZIP_MIME })),
    ]),
    context.target.prefix,
    context.commandId,
  )
  const loading = loadUploader()
  await removeZips(context.workDir)
  try {
    const zipSizes = new Map<string, number>()
    for (const zip of zips) zipSizes.set(zip.alias, await writeZip(context.workDir, zip))
    if (context.target.location === 'INTERNAL') await requireStorageRoom(context.workDir, objects, context.roomBytes)
    const { uploadOutputs } = await loading
    const [probed, keys] = await Promise.all([metas, uploadOutputs(context.target, context.commandId, context.workDir, objects, context.earlier)])
    const results = new Map<string, OutputFileResult>(plain.map((output) => [output.file.alias, plainResult(output, probed, keys, context.target)]))
    for (const zip of zips) results.set(zip.alias, zipResult(zip, zipSizes.get(zip.alias) as number, keys[zip.filename] as string, context.target))
    // Declared order; out_all stands alone.
    const order = context.compress === true ? zips.map((zip) => zip.alias) : collected.map(({ file }) => file.alias)
    return Object.fromEntries(order.map((alias) => [alias, results.get(alias) as OutputFileResult]))
  } finally {
    await removeZips(context.workDir)
  }
}

/**
 * Refuses (STORAGE_QUOTA_EXCEEDED) managed outputs larger together than the
 * room the account had left at hand-off, before any is stored by this phase;
 * what was stored early is deleted with the failure (phases.ts).
 */
async function requireStorageRoom(workDir: string, objects: readonly FileToUpload[], roomBytes: number | undefined): Promise<void> {
  if (roomBytes === undefined) return
  const sizes = await Promise.all(objects.map(async (file) => (await lstat(join(workDir, file.path))).size))
  const refusal = storageRoomRefusal(sizes.reduce((sum, size) => sum + size, 0), roomBytes)
  if (refusal !== null) throw new RunnerFailure('STORAGE_QUOTA_EXCEEDED', refusal)
}

/** One output stored file by file, with its probe: a single file, or a folder output's main file and members. */
function plainResult(
  { file, members, mainName }: CollectedOutput,
  probed: Record<string, MediaMeta>,
  keys: Record<string, string>,
  target: UploadTarget,
): OutputFileResult {
  const meta = probed[file.alias]
  if (!meta) throw new RunnerFailure('INTERNAL_ERROR', `no probe of ${file.alias} was recorded`)
  const result: OutputFileResult = {
    ...meta,
    filename: mainName,
    storage_location: target.location,
    bucket: target.bucket,
    object_key: keys[mainName] as string,
  }
  if (members !== null) {
    const total = members.reduce((sum, member) => sum + member.sizeBytes, 0)
    result.size_mbytes = Math.round((total / BYTES_PER_MB) * 1e6) / 1e6
    result.files = members.map((member) => ({
      filename: member.relative,
      object_key: keys[member.relative] as string,
      size_bytes: member.sizeBytes,
      mime_type: mimeTypeForFilename(member.relative),
    }))
  }
  return result
}
