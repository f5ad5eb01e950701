/**
 * CPU of the status projector's check that a SUCCESS names only objects in
 * its command's folder (contracts/command-folder.ts), which runs on every
 * SUCCESS, beside what the projector does next with the same outputs: their
 * quota holds, and for a managed multi-file output the presigned GET of
 * every member (signing only: no network).
 *
 *   npm run -s bench -- output-folder-check [--members 50] [--rounds 5] [--iterations 400]
 *
 * The check and each baseline alternate, one round of each in turn, so load
 * on the machine falls on all alike; the median round is printed, in µs of
 * this process's CPU (user + system) per SUCCESS, with the load average.
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { S3Client } from '@aws-sdk/client-s3'
import { PresignedGets } from '../api/files/managed-urls.js'
import { outputHolds } from '../api/files/output-files.js'
import { commandFolder, misplacedOutput } from '../contracts/command-folder.js'
import type { MediaMeta } from '../contracts/output-file-meta.js'
import type { OutputFileResult } from '../contracts/status-events.js'

const { values } = parseArgs({ options: { members: { type: 'string', default: '50' }, rounds: { type: 'string', default: '5' }, iterations: { type: 'string', default: '400' } } })
const members = Number(values.members)
const rounds = Number(values.rounds)
const iterations = Number(values.iterations)

const COMMAND_ID = '0b7c3a52-1d4e-4f60-9a8b-2c3d4e5f6a7b'
const BUCKET = 'ffkube'
const MEDIA: MediaMeta = {
  size_mbytes: 1, duration: 4, width: 160, height: 120, frame_rate: 10, bitrate_video_kb: null, bitrate_audio_kb: null, sample_rate: null, channels: null,
  file_type: 'video', file_format: 'hls', codec: 'h264', pixel_format: 'yuv420p', mime_type: 'application/vnd.apple.mpegurl',
}

function key(filename: string): string {
  return `outputs/${COMMAND_ID}/${filename}`
}

const single: Record<string, OutputFileResult> = { out_small: { ...MEDIA, filename: 'small.mp4', storage_location: 'INTERNAL', bucket: BUCKET, object_key: key('small.mp4') } }
const files = Array.from({ length: members }, (_, i) => {
  const filename = `v0/seg_${String(i).padStart(3, '0')}.ts`
  return { filename, object_key: key(filename), size_bytes: 1000, mime_type: null }
})
const multi: Record<string, OutputFileResult> = { out_hls: { ...MEDIA, filename: 'master.m3u8', storage_location: 'INTERNAL', bucket: BUCKET, object_key: key('master.m3u8'), files } }
const folder = commandFolder(COMMAND_ID, null, BUCKET)

const s3 = new S3Client({ endpoint: 'http://127.0.0.1:9', region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'AKIABENCHEXAMPLE', secretAccessKey: 'b'.repeat(40) } })
const signer = await PresignedGets.of(s3, BUCKET, 7 * 86_400)

/** µs of CPU per call of `fn`, over `iterations` calls. */
async function cpuPerCall(fn: () => unknown): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < iterations; i++) await fn()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / iterations
}

function check(outputs: Record<string, OutputFileResult>): void {
  if (misplacedOutput(outputs, folder) !== null) throw new Error('the bench outputs were refused')
}

const variants: Array<[string, () => unknown]> = [
  ['folder check, one file', () => check(single)],
  ['quota holds, one file (baseline)', () => outputHolds(COMMAND_ID, single)],
  [`folder check, ${members} members`, () => check(multi)],
  [`signing ${members} members' GETs (baseline)`, () => Promise.all(files.map((file) => signer.url(file.object_key)))],
]
const samples = new Map<string, number[]>(variants.map(([name]) => [name, []]))
const loadBefore = loadavg()[0]!.toFixed(2)
for (let round = 0; round < rounds; round++) {
  for (const [name, fn] of variants) samples.get(name)!.push(await cpuPerCall(fn))
}
const loadAfter = loadavg()[0]!.toFixed(2)
for (const [name, values] of samples) {
  const median = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  console.log(`${name.padEnd(40)} ${median.toFixed(1).padStart(8)} µs CPU per SUCCESS`)
}
console.log(`median of ${rounds} alternated rounds of ${iterations}; load average ${loadBefore} → ${loadAfter}`)
s3.destroy()
