/**
 * Real-node benchmark: submit → SUCCESS through the API of a chart installed on
 * the single-node cluster (test/cluster/release.ts), beside bare ffmpeg doing
 * the same remux on the host, and where the time goes. Needs what the cluster
 * lane needs (root, provisioning, dist/images.json):
 *
 *   npm run -s bench -- real-node        (BENCH_SAMPLES=20, BENCH_WARMUP=2, BENCH_WARM_PODS=1)
 *
 * Commands run one at a time on a warm node, so each measures the path, not a
 * queue. The client learns the end as a demanding client would: it opens the
 * command's Server-Sent Events (client/command-events.ts, the shipped client)
 * right after the submit and stops at the terminal event. Every moment is
 * taken on this host's clock as it is seen: the POST's answer, watch events
 * for the MediaCommand, Job and Pod (created, scheduled), the runner's status
 * events on NATS (each stage's first event, stamped by the runner with
 * `emitted_at` on the same clock), and SUCCESS through SSE. Bare ffmpeg does
 * the same remux on the host after each command, in the same run.
 *
 * With BENCH_WARM_PODS > 0 (the default, 1) the operator keeps that many
 * runner pods created ahead (ADR 0009) and the samples alternate: `warm`, a
 * remux of the pool's shape (the account's defaults: 2 vCPUs), submitted once
 * a warm pod waits, and `own`, the same remux with vcpu_count 1, which no
 * warm pod fits, so it gets its own Job as every command did before. Each
 * variant gets BENCH_SAMPLES samples; BENCH_WARM_PODS=0 runs `own` alone.
 */
import { execFile } from 'node:child_process'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { promisify } from 'node:util'
import { Watch, type V1Job, type V1Pod } from '@kubernetes/client-node'
import { connect, JSONCodec } from 'nats'
import { toolPath } from '../api/local/tools.js'
import { commandEvents } from '../client/command-events.js'
import { LABEL_COMMAND_ID, type MediaCommand } from '../contracts/media-command.js'
import { STATUS_SUBJECT_PREFIX, type StatusEvent } from '../contracts/status-events.js'
import { startInputServer } from '../test/cluster/host-servers.js'
import { installRelease, PUBLIC_IP, RUNNER_NAMESPACE } from '../test/cluster/release.js'
import { makeClip } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { percentile, printTable } from './table.js'
import { benchRun } from './bench-run.js'

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 20)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2)
const WARM_PODS = Number(process.env.BENCH_WARM_PODS ?? 1)
type Variant = 'warm' | 'own'
const VARIANTS: Variant[] = WARM_PODS > 0 ? ['warm', 'own'] : ['own']
const run = promisify(execFile)

const { t, run: runBench } = benchRun()

/** Wall-clock milliseconds (performance.timeOrigin + now) so they compare with the runner's emitted_at. */
const now = () => performance.timeOrigin + performance.now()

/** The moments of one command, each the first time it was seen. */
interface Moments {
  submitted: number
  accepted?: number
  mediaCommand?: number
  job?: number
  pod?: number
  scheduled?: number
  /** Runner events by stage (FETCHING, PROBING, RUNNING, UPLOADING) and SUCCESS: emitted_at. */
  emitted: Map<string, number>
  /** The runner's SUCCESS event as it arrived here. */
  successArrived?: number
  /** SUCCESS as the client saw it, through SSE. */
  visible?: number
  /** The Job its MediaCommand's status named. */
  jobName?: string
  ffmpegSeconds?: number
}

/** The segments printed, each between two moments; undefined when one of them was not seen. */
const SEGMENTS: Array<[string, (m: Moments) => number | undefined]> = [
  // The runner's UPLOADING event often shares a progress-throttle window with SUCCESS and is
  // dropped, so the last runner segment runs from ffmpeg's first event to SUCCESS. The pod's two
  // containers (ffmpeg: fetch and run; upload) start together (operator/job-builder.ts).
  ['API: POST → 200 (command stored, accepted)', (m) => diff(m.submitted, m.accepted)],
  ['dispatch: accepted → MediaCommand created', (m) => diff(m.accepted, m.mediaCommand)],
  // A warm pod's Job and pod exist before the command: their moments are when they were seen with its label (the claim).
  ['operator: MediaCommand → Job created (warm: claimed)', (m) => diff(m.mediaCommand, m.job)],
  ['job controller: Job → Pod created (warm: the pod labelled)', (m) => diff(m.job, m.pod)],
  ['scheduler: Pod created → scheduled (warm: 0)', (m) => diff(m.pod, m.scheduled)],
  // The runner's progress throttle merges what comes within its first 250 ms into one event with the
  // newest stage, so a fast fetch sends no FETCHING: the first event, whatever its stage, ends this one.
  ['kubelet and runner start: scheduled → the ffmpeg container\'s first event (sandbox, CNI, container start, node, NATS; warm: the kubelet writes the claim file)', (m) => diff(m.scheduled, firstOf(m, 'FETCHING', 'DOWNLOADING', 'RUNNING', 'PROBING'))],
  ['fetch phase (when its FETCHING event was sent)', (m) => diff(m.emitted.get('FETCHING'), firstOf(m, 'PROBING', 'RUNNING'))],
  ['run phase (ffmpeg, probe), hand-over to the upload container, upload', (m) => diff(firstOf(m, 'PROBING', 'RUNNING'), m.emitted.get('SUCCESS'))],
  ['projector and SSE: runner SUCCESS → SUCCESS seen by the client', (m) => diff(m.emitted.get('SUCCESS'), m.visible)],
]

function diff(from: number | undefined, to: number | undefined): number | undefined {
  return from === undefined || to === undefined ? undefined : to - from
}

function firstOf(m: Moments, ...stages: string[]): number | undefined {
  const seen = stages.map((s) => m.emitted.get(s)).filter((v): v is number => v !== undefined)
  return seen.length ? Math.min(...seen) : undefined
}

async function watch<T>(kc: import('@kubernetes/client-node').KubeConfig, path: string, query: Record<string, string>, seen: (obj: T, type: string) => void): Promise<void> {
  const controller = await new Watch(kc).watch(path, query, (type, obj: T) => seen(obj, type), () => {})
  t.teardown(() => controller.abort())
}

async function main(): Promise<void> {
  const release = await installRelease(t, (line) => console.error(`real-node: ${line}`), {
    values: (values) => {
      (values.runners as Record<string, unknown>).warmPods = { count: WARM_PODS, vcpuMillis: 2000, memoryMib: 8192, idleSeconds: 3600 }
    },
  })
  const { client, kc } = release
  const dir = await scratchDir(t, 'ffkube-bench-real-')
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })
  const inputs = await startInputServer(t, [clip], [PUBLIC_IP])
  const moments = new Map<string, Moments>()
  const of = (id: string | undefined) => (id ? moments.get(id) : undefined)

  await watch<MediaCommand>(kc, `/apis/ffkube.io/v1alpha1/namespaces/${RUNNER_NAMESPACE}/mediacommands`, {}, (mc, type) => {
    const m = of(mc.metadata.name)
    if (m && type === 'ADDED') m.mediaCommand ??= now()
    if (m && mc.status?.jobName) m.jobName ??= mc.status.jobName
  })
  await watch<V1Job>(kc, `/apis/batch/v1/namespaces/${RUNNER_NAMESPACE}/jobs`, {}, (job) => {
    const m = of(job.metadata?.labels?.[LABEL_COMMAND_ID])
    if (m) m.job ??= now()
  })
  // Warm pods waiting for a command: unclaimed, both containers running.
  const waiting = new Set<string>()
  await watch<V1Pod>(kc, `/api/v1/namespaces/${RUNNER_NAMESPACE}/pods`, {}, (pod, type) => {
    const name = pod.metadata?.name ?? ''
    const ready = type !== 'DELETED' && pod.metadata?.labels?.['ffkube.io/warm-pod'] === 'true' && !pod.metadata?.labels?.[LABEL_COMMAND_ID] &&
      !pod.metadata?.deletionTimestamp && (pod.status?.containerStatuses ?? []).filter((s) => s.state?.running).length === 2
    if (ready) waiting.add(name)
    else waiting.delete(name)
    const m = of(pod.metadata?.labels?.[LABEL_COMMAND_ID])
    if (!m) return
    m.pod ??= now()
    if (pod.spec?.nodeName) m.scheduled ??= now()
  })
  const nats = await connect({ servers: release.nats.url, name: 'bench-real-node' })
  t.teardown(() => nats.close())
  const codec = JSONCodec<StatusEvent>()
  nats.subscribe(`${STATUS_SUBJECT_PREFIX}.>`, {
    callback: (err, msg) => {
      if (err) return
      const event = codec.decode(msg.data)
      const m = of(event.command_id)
      if (!m) return
      const key = event.type === 'PROCESSING' ? event.stage : event.type
      if (!m.emitted.has(key)) m.emitted.set(key, Date.parse(event.emitted_at))
      if (event.type === 'SUCCESS') m.successArrived ??= now()
    },
  })

  const remux = {
    input_files: { in_video: inputs.url(PUBLIC_IP, clip) },
    output_files: { out_video: 'remux.mkv' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -c copy {{out_video}}',
  }
  const bodies: Record<Variant, object> = { warm: remux, own: { ...remux, vcpu_count: 1 } }
  const samples = new Map<Variant, { e2e: number[]; bare: number[]; all: Moments[]; loads: number[]; claimed: number }>(
    VARIANTS.map((v) => [v, { e2e: [], bare: [], all: [], loads: [], claimed: 0 }]),
  )
  const rounds = VARIANTS.length * (WARMUP + SAMPLES)
  for (let i = 0; i < rounds; i++) {
    const variant = VARIANTS[i % VARIANTS.length]!
    if (variant === 'warm') {
      // The pool's steady state: a warm pod waits when the command comes (the refill after the last claim is not timed).
      const since = now()
      while (waiting.size === 0 && now() - since < 120_000) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const m: Moments = { submitted: now(), emitted: new Map() }
    const answer = await client.request('POST', '/run-ffmpeg-command', bodies[variant])
    if (answer.status !== 200) throw new Error(`submit answered ${answer.status}: ${JSON.stringify(answer.body)}`)
    m.accepted = now()
    const id = answer.body.command_id as string
    moments.set(id, m)
    for await (const event of commandEvents(id, { baseUrl: release.baseUrl, apiKey: release.apiKey })) {
      const command = event.command
      if (command.status !== 'SUCCESS' && command.status !== 'FAILED') continue
      if (command.status !== 'SUCCESS') throw new Error(`${id} ended ${command.status}: ${command.error_status} ${command.error_message}`)
      m.visible = now()
      m.ffmpegSeconds = command.ffmpeg_command_run_seconds ?? undefined
      break
    }
    if (m.visible === undefined) throw new Error(`the event stream of ${id} ended before the command did`)
    // The same remux by ffmpeg on the host, right after, on the same file.
    const start = now()
    await run(toolPath('ffmpeg'), ['-hide_banner', '-loglevel', 'error', '-y', '-i', clip, '-c', 'copy', join(dir, 'bare.mkv')])
    const bareMs = now() - start
    if (i < VARIANTS.length * WARMUP) continue
    const s = samples.get(variant)!
    s.e2e.push(m.visible - m.submitted)
    s.bare.push(bareMs)
    s.all.push(m)
    s.loads.push(loadavg()[0]!)
    if (m.jobName?.startsWith('ffkube-warm-')) s.claimed++
    console.error(`real-node: ${variant} ${s.e2e.length}/${SAMPLES} ${id} ${(m.visible - m.submitted).toFixed(0)} ms, Job ${m.jobName ?? '?'} (load ${loadavg()[0]!.toFixed(1)})`)
  }
  for (const [variant, s] of samples) {
    console.log('')
    console.log(`== ${variant === 'warm' ? 'warm: a runner pod created ahead, claimed' : 'own: a Job and pod made for the command (as before)'} — ${s.claimed}/${s.all.length} ran in a claimed warm pod`)
    report(s.e2e, s.bare, s.all, s.loads)
  }
}

function report(e2e: number[], bare: number[], all: Moments[], loads: number[]): void {
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
  const overhead = sorted(e2e.map((ms, i) => ms - bare[i]!))
  const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`
  const rows: Array<[string, string, string]> = [
    [`submit → SUCCESS through SSE, p50 (n=${e2e.length}, sequential)`, fmt(percentile(sorted(e2e), 50)), ''],
    ['submit → SUCCESS through SSE, p99', fmt(percentile(sorted(e2e), 99)), ''],
    ['bare ffmpeg remux on the host, p50', fmt(percentile(sorted(bare), 50)), ''],
    ['overhead (submit → SUCCESS minus bare ffmpeg), p50', fmt(percentile(overhead, 50)), '≤ 1 s'],
    ['overhead, p99', fmt(percentile(overhead, 99)), '≤ 2 s'],
    ['host load average (1 min) over the samples, p50 / max', `${percentile(sorted(loads), 50).toFixed(1)} / ${Math.max(...loads).toFixed(1)}`, ''],
    ['ffmpeg_command_run_seconds the runner reported, p50', fmt(1000 * percentile(sorted(all.map((m) => m.ffmpegSeconds ?? 0)), 50)), ''],
  ]
  printTable(rows)
  console.log('')
  console.log('where the time goes (ms; p50 / p99 / max over the samples)')
  const width = Math.max(...SEGMENTS.map(([name]) => name.length))
  let sum = 0
  for (const [name, segment] of SEGMENTS) {
    const values = sorted(all.map(segment).filter((v): v is number => v !== undefined))
    if (values.length === 0) {
      console.log(`${name.padEnd(width)} | not seen`)
      continue
    }
    sum += percentile(values, 50)
    const missing = all.length - values.length
    console.log(`${name.padEnd(width)} | ${percentile(values, 50).toFixed(0).padStart(6)} / ${percentile(values, 99).toFixed(0).padStart(6)} / ${values[values.length - 1]!.toFixed(0).padStart(6)}${missing ? ` (${missing} not seen)` : ''}`)
  }
  console.log(`${'sum of the p50s'.padEnd(width)} | ${sum.toFixed(0).padStart(6)}`)
}

await runBench(main)
