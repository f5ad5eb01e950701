/**
 * Multi-file outputs benchmark (issue 28 item 5; run after `npx tsc`:
 * `npm run -s bench -- multi-file`). A 60 s 1280x720 H.264/AAC clip to a
 * three-rendition HLS ladder (720p, 480p, 360p) with 1 s segments and a
 * master playlist: about 190 files.
 *   (a) storing the outputs: the runner (in this process, on harness versitygw)
 *       times its deliver phase (the main file's probe and every upload
 *       left after ffmpeg ends: most segments went up while it ran,
 *       upload/pre-uploads.ts; runner_phase_seconds.deliver); then, in the same run, the same SDK
 *       uploads the same files from this script, all at once and 12 at a
 *       time, to another prefix. Target: ffkube <= 1.5x the script.
 *   (b) submit -> SUCCESS through the service as `npm start` runs it (HTTP,
 *       local executor), seen by the client over Server-Sent Events (GET
 *       /commands/:id/events), minus a bare ffmpeg of the same arguments on a
 *       local copy run right after it (before it, every other sample); and where the difference goes, in time
 *       and in CPU by process (bench/multi-file-overhead.ts). Target: <= 1 s.
 * Knobs: BENCH_SAMPLES (default 2), BENCH_CLIP_SECONDS (default 60),
 * BENCH_CLIENTS (default `sse`; `sse,poll` alternates an SSE client and one
 * polling GET every 50 ms, sample by sample), BENCH_PARTS (default `a,b`).
 * BENCH_BASELINE: built checkouts of other trees (their dist/), comma-separated;
 * (b) then runs a service of each and of this tree, on servers of their own,
 * alternated sample by sample (order reversed every other sample), and prints
 * their splits side by side, the idle ones' CPU set aside. BENCH_PROFILE_DIR: (b)'s service and its warm
 * runners profile themselves, one CPU profile per command and process
 * (bench/cpu-profile-windows.ts; `node dist/bench/cpu-profile-summary.js DIR`).
 */
import { mkdir, readdir, readFile, stat } from 'node:fs/promises'
import { createReadStream } from 'node:fs'
import { loadavg } from 'node:os'
import { basename, join } from 'node:path'
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { connect } from 'nats'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { startS3, type TestS3 } from '../test/harness/s3.js'
import { scratchDir } from '../test/harness/scratch.js'
import { Client, serviceEnvironment, startService, type RunningService } from '../test/e2e/service.js'
import { runRunner, specOf } from '../test/runner/harness.js'
import { benchRun } from './bench-run.js'
import { besideTheEncode, measureOverhead, median, printSplit, type ClientKind, type OverheadJob, type OverheadSample } from './multi-file-overhead.js'
import { closeWindow } from './cpu-profile-windows.js'
import { accountAll, childrenOf, stopAccounting } from './process-cpu.js'
import { RunnerStages } from './runner-stages.js'

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 2)
const CLIP_SECONDS = Number(process.env.BENCH_CLIP_SECONDS ?? 60)
const CLIENTS = (process.env.BENCH_CLIENTS ?? 'sse').split(',') as ClientKind[]
const PARTS = (process.env.BENCH_PARTS ?? 'a,b').split(',')
const BASELINES = (process.env.BENCH_BASELINE ?? '').split(',').filter(Boolean)
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR
const OUTPUTS = { out_ladder: 'stream_%v.m3u8' }
const COMMAND =
  'ffmpeg -i {{in_video}} -map 0:v -map 0:a -map 0:v -map 0:a -map 0:v -map 0:a ' +
  '-s:v:0 1280x720 -s:v:1 854x480 -s:v:2 640x360 -c:v libx264 -preset ultrafast -g 25 -keyint_min 25 -sc_threshold 0 -c:a aac ' +
  "-f hls -hls_time 1 -hls_playlist_type vod -var_stream_map 'v:0,a:0,name:720p v:1,a:1,name:480p v:2,a:2,name:360p' " +
  '-master_pl_name master.m3u8 -hls_segment_filename seg_%v_%03d.ts {{out_ladder}}'

const { t, run } = benchRun()

/** Every file under `dir`, relative. */
async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
}

/** The same SDK, from a script: PUT every file streamed from disk, at most `limit` at once. */
async function scriptUpload(client: S3Client, s3: TestS3, dir: string, files: string[], prefix: string, limit: number): Promise<number> {
  const started = performance.now()
  let next = 0
  const worker = async () => {
    while (next < files.length) {
      const name = files[next++] as string
      const path = join(dir, name)
      const { size } = await stat(path)
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `${prefix}/${name}`, Body: createReadStream(path), ContentLength: size }))
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, files.length) }, worker))
  return (performance.now() - started) / 1000
}

/** A titled table with a column per header. */
function printTable(title: string, headers: string[], rows: string[][]): void {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)))
  const line = (cells: string[]) => cells.map((cell, i) => cell.padStart(widths[i] as number)).join(' | ')
  console.log(`\n${title}\n${line(headers)}\n${widths.map((w) => '-'.repeat(w)).join('-|-')}`)
  for (const row of rows) console.log(line(row))
}

const f = (seconds: number) => seconds.toFixed(3)

/** (a) storing the outputs: the runner's deliver phase against the same SDK from a script. */
async function storing(dir: string, clipUrl: string): Promise<void> {
  const s3 = await startS3(t)
  const client = s3.client()
  t.teardown(() => client.destroy())
  const rows: string[][] = []
  let fileCount = 0
  for (let sample = 0; sample < SAMPLES; sample++) {
    const spec = specOf({ inputFiles: { in_video: clipUrl }, outputFiles: OUTPUTS, ffmpegCommands: [COMMAND] })
    const result = await runRunner(dir, spec, s3, { ALLOW_PRIVATE_NETWORKS: '1' })
    if (result.terminal.type !== 'SUCCESS') throw new Error(JSON.stringify(result.terminal))
    const phases = result.terminal.runner_phase_seconds
    const deliver = phases?.deliver ?? NaN
    const folder = join(dir, `work-${spec.commandId}`, 'outputs', 'out_ladder')
    const files = await filesUnder(folder)
    fileCount = files.length
    const all = await scriptUpload(client, s3, folder, files, `script-all/${spec.commandId}`, files.length)
    const twelve = await scriptUpload(client, s3, folder, files, `script-12/${spec.commandId}`, 12)
    const best = Math.min(all, twelve)
    rows.push([String(sample + 1), String(files.length), `${f(phases?.fetch ?? NaN)} / ${f(phases?.run ?? NaN)}`, f(deliver), f(all), f(twelve), (deliver / best).toFixed(2)])
  }
  printTable(
    `(a) storing a ${CLIP_SECONDS} s 3-rendition HLS ladder (${fileCount} files), seconds; target ffkube <= 1.5x the script`,
    ['sample', 'files', 'runner fetch / run', 'ffkube deliver', 'script, all at once', 'script, 12 at a time', 'ratio to the faster'],
    rows,
  )
}

/** A service under test in (b), on harness servers of its own. */
interface Variant {
  name: string
  service: RunningService
  api: Client
  stages: RunnerStages
  /** Its service and servers: set aside while another variant is measured. */
  processes: number[]
}

/** Starts `entry` (a built api/main.js) on servers of its own; its processes are the bench's children it added. */
async function startVariant(name: string, entry: string): Promise<Variant> {
  const before = new Set(await childrenOf(process.pid))
  const environment = await serviceEnvironment(t, PROFILE_DIR ? { BENCH_PROFILE_DIR: PROFILE_DIR } : {})
  const service = await startService(t, environment, entry)
  const nc = await connect({ servers: environment.env.NATS_URL as string })
  t.teardown(() => nc.close())
  const processes = (await childrenOf(process.pid)).filter((pid) => !before.has(pid))
  return { name, service, api: new Client(service), stages: new RunnerStages(nc), processes }
}

/** (b) submit -> SUCCESS through the service, seen by the client, over a bare ffmpeg of the same arguments right after. */
async function overhead(job: OverheadJob): Promise<void> {
  if (PROFILE_DIR) await mkdir(PROFILE_DIR, { recursive: true })
  const variants = [await startVariant(BASELINES.length > 0 ? 'this' : '', PROFILE_DIR ? 'dist/bench/profiled-service.js' : 'dist/api/main.js')]
  for (const baseline of BASELINES) variants.push(await startVariant(basename(baseline), join(baseline, 'dist', 'api', 'main.js')))
  const columns = variants.flatMap((variant) => CLIENTS.map((client) => ({ variant, client, name: [variant.name, client].filter(Boolean).join(' ') })))
  const samples = new Map<string, OverheadSample[]>(columns.map((column) => [column.name, []]))
  const rows: string[][] = []
  for (let sample = 0; sample < SAMPLES; sample++) {
    // Alternated, so a change in the machine's load falls on every kind alike, and on the bare run and the service's alike.
    for (const { variant, client, name } of sample % 2 === 0 ? columns : [...columns].reverse()) {
      const aside = new Set(variants.filter((other) => other !== variant).flatMap((other) => other.processes))
      const label = `s${String(sample + 1).padStart(2, '0')}${name ? `-${name.replaceAll(' ', '-')}` : ''}`
      const around = PROFILE_DIR ? (moment: 'before' | 'after') => closeWindow(PROFILE_DIR, variant.service.child.pid ?? -1, `${label}-${moment === 'before' ? 'idle' : 'command'}`) : undefined
      const seen = await measureOverhead(t, variant.service, variant.api, variant.stages, job, client, sample % 2 === 1, { aside, ...(around ? { around } : {}) })
      samples.get(name)?.push(seen)
      rows.push([String(sample + 1), name, f(seen.total), f(seen.ffmpegInService), f(seen.bare), f(seen.total - seen.bare), f(seen.total - seen.ffmpegInService), `${seen.cpu.tools?.toFixed(1) ?? 'n/a'} / ${seen.bareCpu.toFixed(1)}`, besideTheEncode(seen.cpu).toFixed(2), loadavg()[0]?.toFixed(1) ?? ''])
      // Each sample as it ends, so a long run that is stopped still leaves its figures.
      process.stderr.write(`sample ${rows.at(-1)?.join(' | ') ?? ''}\n`)
    }
  }
  printTable(
    '(b) submit -> SUCCESS over bare ffmpeg, seconds; target overhead <= 1 s',
    ['sample', 'variant', 'submit -> SUCCESS', 'ffmpeg in service', 'bare ffmpeg', 'overhead', 'outside ffmpeg', 'ffmpeg CPU s in / bare', 'others CPU s', 'load'],
    rows,
  )
  printSplit('(b) where the overhead goes', columns.map(({ name }) => ({ name: name || CLIENTS.join(','), samples: samples.get(name) ?? [] })))
  for (const { name } of columns) process.stdout.write(`median overhead${name ? `, ${name}` : ''}: ${f(median((samples.get(name) ?? []).map((s) => s.total - s.bare)))} s\n`)
  for (const variant of variants) process.stdout.write(`warm runners' peak memory${variant.name ? `, ${variant.name}` : ''}: ${(await runnerPeaks(variant.service.child.pid ?? -1)).join(', ') || 'none alive'}\n`)
}

/** Each warm runner under `service`: its peak RSS (VmHWM) and its private resident memory now (RssAnon), in MiB. */
async function runnerPeaks(service: number): Promise<string[]> {
  const peaks: string[] = []
  for (const pid of await childrenOf(service)) {
    const [cmdline, status] = await Promise.all([readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''), readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')])
    if (!/pool-worker\.js/.test(cmdline)) continue
    const mib = (field: string) => (Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024).toFixed(1)
    peaks.push(`pid ${pid} peak ${mib('VmHWM')} MiB, private now ${mib('RssAnon')} MiB`)
  }
  return peaks
}

await run(async () => {
  // Before anything starts, so the tools' CPU can be told apart (process-cpu.ts).
  accountAll()
  const dir = await scratchDir(t, 'ffkube-bench-multi-')
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: CLIP_SECONDS, width: 1280, height: 720 })
  const media = await serveFiles(t, [clip])
  if (PARTS.includes('a')) await storing(dir, media.url(clip))
  if (PARTS.includes('b')) await overhead({ body: { input_files: { in_video: media.url(clip) }, output_files: OUTPUTS, ffmpeg_command: COMMAND }, clip })
}, stopAccounting)
