/**
 * Outputs as the runner leaves them: files put in a bucket under
 * `{prefix}/{command_id}/{relative path}`, and the SUCCESS event that
 * reports them, published on the real status stream. For tests of what the
 * API makes of a runner's result without running ffmpeg through the service.
 */
import { execFile } from 'node:child_process'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { promisify } from 'node:util'
import { ListObjectsV2Command, PutObjectCommand, type _Object, type S3Client } from '@aws-sdk/client-s3'
import type { JetStreamClient } from 'nats'
import { createLogger } from '../../api/logger.js'
import { toolPath } from '../../api/local/tools.js'
import type { MediaMeta } from '../../contracts/output-file-meta.js'
import { statusEventId, type OutputFileResult, type OutputMember, type SuccessEvent } from '../../contracts/status-events.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'

const run = promisify(execFile)

/** Every regular file under `dir`, as '/'-separated paths relative to it, sorted. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  const files = entries.filter((entry) => entry.isFile()).map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
  return files.sort()
}

/** Puts every file of `dir` in `bucket` at `{prefix}/{commandId}/{path}`, as the runner's upload does; returns the members. */
export async function putLikeRunner(s3: S3Client, bucket: string, prefix: string, commandId: string, dir: string): Promise<OutputMember[]> {
  const members: OutputMember[] = []
  for (const filename of await filesUnder(dir)) {
    const body = await readFile(join(dir, filename))
    const objectKey = `${prefix ? `${prefix}/` : ''}${commandId}/${filename}`
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: objectKey, Body: body }))
    members.push({ filename, object_key: objectKey, size_bytes: (await stat(join(dir, filename))).size, mime_type: null })
  }
  return members
}

/** Media facts of a main file; the API copies them through, so any plausible values do. */
export const MAIN_FILE_FACTS: MediaMeta = {
  size_mbytes: null, duration: 4, file_type: 'video', file_format: 'hls', codec: 'h264', pixel_format: 'yuv420p', mime_type: 'application/vnd.apple.mpegurl',
  width: 160, height: 120, frame_rate: 10, bitrate_video_kb: null, bitrate_audio_kb: null, sample_rate: null, channels: null,
}

/** A multi-file output's result as the runner reports it: the main file named, the total size, every member listed. */
export function multiFileResult(location: { bucket: string; storage_location: 'INTERNAL' | 'EXTERNAL' }, main: string, members: OutputMember[]): OutputFileResult {
  const mainMember = members.find((member) => member.filename === main)
  if (!mainMember) throw new Error(`no member ${main}`)
  const total = members.reduce((sum, member) => sum + member.size_bytes, 0)
  return { ...MAIN_FILE_FACTS, size_mbytes: Math.round((total / 1048576) * 1e6) / 1e6, filename: main, object_key: mainMember.object_key, files: members, ...location }
}

/** The SUCCESS event of a command with these outputs, with the runner's event id unless `eventId` says otherwise (a replay under another id). */
export function successEvent(commandId: string, outputFiles: Record<string, OutputFileResult>, eventId?: string): SuccessEvent {
  const body = { type: 'SUCCESS' as const, output_files: outputFiles, ffmpeg_command_run_seconds: 1.5, failed_files: null }
  return { ...body, command_id: commandId, event_id: eventId ?? statusEventId(commandId, body), emitted_at: new Date().toISOString() }
}

/** Publishes a status event on the real stream, as the runner does (its Nats-Msg-Id is the event id). */
export async function publishLikeRunner(js: JetStreamClient, event: SuccessEvent): Promise<void> {
  await publishStatusEvent(js, event, { logger: createLogger('test', 'silent') })
}

/** Every object under `prefix` in `bucket`, every page of the listing. */
async function objectsUnder(s3: S3Client, bucket: string, prefix: string): Promise<_Object[]> {
  const objects: _Object[] = []
  let token: string | undefined
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }))
    objects.push(...(page.Contents ?? []))
    token = page.NextContinuationToken
  } while (token)
  return objects
}

/** Every key under `prefix` in `bucket`, sorted, with its ETag and last-modified time. */
export async function listBucket(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const objects = await objectsUnder(s3, bucket, prefix)
  return objects.map((object) => `${object.Key ?? ''} ${object.ETag ?? ''} ${object.LastModified?.toISOString() ?? ''}`).sort()
}

/** Every key under `prefix` in `bucket`, sorted. */
export async function keysUnder(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  return (await objectsUnder(s3, bucket, prefix)).map((object) => object.Key as string).sort()
}

/** A 4 s, 2-rendition HLS ladder written by the provisioned ffmpeg in `dir` (its cwd, as the runner runs it): master.m3u8, v0/ and v1/ with a playlist and 1 s segments each. */
export async function makeHlsLadder(dir: string): Promise<void> {
  await run(toolPath('ffmpeg'), [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=10:duration=4', '-f', 'lavfi', '-i', 'sine=duration=4',
    '-map', '0:v', '-map', '1:a', '-map', '0:v', '-map', '1:a', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-c:a', 'aac', '-s:v:1', '80x60',
    '-f', 'hls', '-hls_time', '1', '-hls_list_size', '0', '-var_stream_map', 'v:0,a:0 v:1,a:1', '-master_pl_name', 'master.m3u8',
    '-hls_segment_filename', 'v%v/seg_%03d.ts', 'v%v/prog.m3u8',
  ], { cwd: dir })
}

/** The standard player: Debian's ffprobe, built with HTTP and libxml2 (ffkube's own has no network protocols). */
export const STANDARD_PLAYER = '/usr/bin/ffprobe'

/** Seconds from the first packet's start to the last one's end: the media a player read, whatever the stream's start time. */
function packetSpan(packets: { pts_time: string; duration_time: string }[]): number {
  const starts = packets.map((p) => Number(p.pts_time))
  return Math.max(...packets.map((p) => Number(p.pts_time) + Number(p.duration_time))) - Math.min(...starts)
}

/** What the standard player reads of a URL's first video stream: the container's duration, and the span of every packet it read. */
export async function play(url: string): Promise<{ duration: number; span: number; packets: number }> {
  const { stdout } = await run(STANDARD_PLAYER, ['-v', 'error', '-show_entries', 'format=duration:packet=pts_time,duration_time', '-select_streams', 'v:0', '-of', 'json', url], { maxBuffer: 64 * 1024 * 1024 })
  const parsed = JSON.parse(stdout) as { format: { duration?: string }; packets: { pts_time: string; duration_time: string }[] }
  return { duration: Number(parsed.format.duration), span: packetSpan(parsed.packets), packets: parsed.packets.length }
}
