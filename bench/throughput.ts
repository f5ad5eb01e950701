/**
 * Throughput on the real single node (issue 29, item 2): a burst of remux
 * commands through ffkube's API beside the node's ceiling, a burst of bare
 * pods of the same runner image doing the same work (fetch, remux, store;
 * bench/bare-remux-pod.ts) created straight through the API server. Needs
 * what the cluster lane needs (root, provisioning, dist/images.json):
 *
 *   npm run -s bench -- throughput (BENCH_COMMANDS=100, BENCH_ROUNDS=2)
 *
 * The variants alternate (bare, ffkube, ffkube, bare, …) in one run on one
 * cluster, so the other load on the host falls on both. Each burst is
 * submitted as a client would, ten requests at a time; ffkube's commands
 * are then followed by listing the account's commands every 2 s (the
 * client's view: submit → SUCCESS as GET shows it), bare pods by a watch.
 * Per burst: makespan (first submit → last end), commands/s over it, the
 * sustained rate between the 10th and the 90th end, pods running at once.
 *
 * The account's concurrency limit is raised to the burst
 * (BENCH_ACCOUNT_CONCURRENCY, default BENCH_COMMANDS): the chart's default
 * for Business is 8, a policy rather than the node's limit.
 */
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { CoreV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node'
import { LABEL_COMMAND_ID } from '../contracts/media-command.js'
import { startInputServer } from '../test/cluster/host-servers.js'
import { NAMESPACE, PUBLIC_IP, RUNNER_NAMESPACE, type Release } from '../test/cluster/release.js'
import { makeClip } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { buildBareRemuxPod, LABEL_BARE_RUN } from './bare-remux-pod.js'
import { countsSince, printRequestsPerCommand, scrapeRequestCounts, type RequestCounts } from './apiserver-requests.js'
import { installBenchRelease, SERVICE_CPU_REQUEST } from './bench-release.js'
import { benchRun } from './bench-run.js'
import { watchPods, type PodCensus } from './pod-census.js'
import { watchCpu, type CpuByGroup } from './process-cpu.js'
import { percentile } from './table.js'

const COMMANDS = Number(process.env.BENCH_COMMANDS ?? 100)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const ACCOUNT_CONCURRENCY = Number(process.env.BENCH_ACCOUNT_CONCURRENCY ?? COMMANDS)
const BURST_TIMEOUT_MS = Number(process.env.BENCH_BURST_TIMEOUT_SECONDS ?? 900) * 1000
/**
 * How often the account's commands are listed: each listing of 100 commands costs the API and
 * the store CPU that the node's runners also want, so not faster than a patient client.
 */
const LIST_EVERY_MS = 2000
const BARE_NAMESPACE = 'ffkube-bench-bare'
/** The runner image's user (runner-image/Dockerfile). */
const RUNNER_UID = 65532

const { t, run: runBench } = benchRun()

type Variant = 'bare pods' | 'ffkube'

interface Burst {
  variant: Variant
  /** Date.now() of each item's submit (POST or pod create sent), by submit order. */
  submitted: number[]
  /** Date.now() of each item's end as its client saw it, by submit order; NaN if it did not end. */
  ended: number[]
  failed: number
  maxRunning: number
  unschedulable: number
  load: [number, number]
  /** Submits sent again after a failed connection. */
  retries: number
  /** CPU ms over the burst: `runner pods` (the pods that come and go), the lasting pods by name, then this bench's process tree by group. */
  cpu: CpuByGroup
  /** The API server's requests and watch events over the burst (bench/apiserver-requests.ts). */
  requests: RequestCounts
}

const KUBEPODS = '/sys/fs/cgroup/cpuacct/kubepods'

/** CPU ms a pod's cgroup (or with no uid, every pod on the node: the kubelet's cgroup counts its children's) has used. */
function podsCpuMs(uid?: string): number {
  // cgroupfs driver, cgroup v1: a pod's group is under its QoS class's, a Guaranteed pod's directly under kubepods.
  for (const dir of uid === undefined ? [KUBEPODS] : [`${KUBEPODS}/pod${uid}`, `${KUBEPODS}/burstable/pod${uid}`, `${KUBEPODS}/besteffort/pod${uid}`]) {
    try {
      return Number(readFileSync(`${dir}/cpuacct.usage`, 'utf8')) / 1e6
    } catch {
      // Not this QoS class.
    }
  }
  return NaN
}

/**
 * The pods that outlive a burst (the release's API, worker, operators, deliverer, and
 * kube-system's), by uid, each with the name of its Deployment: the pod's name without the
 * ReplicaSet's and the pod's suffixes.
 */
async function lastingPods(release: Release): Promise<Map<string, string>> {
  const pods = new Map<string, string>()
  for (const namespace of [NAMESPACE, 'kube-system']) {
    const list = await release.kubectlJson<{ items: V1Pod[] }>(['-n', namespace, 'get', 'pods'])
    for (const pod of list.items) pods.set(pod.metadata!.uid!, `pod ${pod.metadata!.name!.replace(/(-[a-z0-9]{6,10})?-[a-z0-9]{5}$/, '')}`)
  }
  return pods
}

/**
 * What the node and its host side spend while `burst` runs: the pods, split into the release's
 * lasting pods by name and the rest (`runner pods`: ffkube's runners, or the bare pods), and the
 * processes under this bench (the kube components, containerd, the MongoDB-wire server, NATS, S3,
 * the bench itself), which the other sessions on the host are not.
 */
async function withCpu(release: Release, burst: () => Promise<Omit<Burst, 'cpu' | 'requests'>>): Promise<Burst> {
  const lasting = await lastingPods(release)
  const requestsBefore = await scrapeRequestCounts(release.kubectl)
  const before = new Map([...lasting.keys()].map((uid) => [uid, podsCpuMs(uid)]))
  const pods = podsCpuMs()
  const tree = watchCpu(process.pid, 2000)
  const result = await burst()
  const cpu = await tree.stop()
  const requests = countsSince(requestsBefore, await scrapeRequestCounts(release.kubectl))
  const byPod: CpuByGroup = {}
  let lastingTotal = 0
  for (const [uid, name] of lasting) {
    const used = podsCpuMs(uid) - before.get(uid)!
    // A pod replaced during the burst (NaN) stays in `runner pods`: its share cannot be told apart.
    if (Number.isNaN(used)) continue
    byPod[name] = (byPod[name] ?? 0) + used
    lastingTotal += used
  }
  return { ...result, requests, cpu: { 'runner pods': podsCpuMs() - pods - lastingTotal, ...byPod, ...cpu } }
}

/** Sends `count` submits, ten at a time, as a client's burst. */
async function submitInTens<T>(count: number, submit: (index: number) => Promise<T>): Promise<T[]> {
  const out: T[] = []
  for (let i = 0; i < count; i += 10) {
    out.push(...await Promise.all(Array.from({ length: Math.min(10, count - i) }, (_, k) => submit(i + k))))
  }
  return out
}

async function waitUntil(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + BURST_TIMEOUT_MS
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(250)
  }
}

async function ffkubeBurst(release: Release, inputUrl: string, count = COMMANDS): Promise<Omit<Burst, 'cpu' | 'requests'>> {
  const load0 = loadavg()[0]!
  const census = await watchPods(release.kc, RUNNER_NAMESPACE, (pod) => pod.metadata?.labels?.[LABEL_COMMAND_ID])
  const submitted: number[] = []
  const body = {
    input_files: { in_video: inputUrl },
    output_files: { out_video: 'remux.mkv' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -map 0 -c copy {{out_video}}',
  }
  let retries = 0
  const ids = await submitInTens(count, async (i) => {
    submitted[i] = Date.now()
    // A POST whose connection failed is sent again, as a client would (the first may have been
    // accepted: that command then runs unwatched, and the retry is counted).
    for (let attempt = 1; ; attempt++) {
      try {
        const { command_id } = await release.client.post('/run-ffmpeg-command', body)
        return command_id as string
      } catch (err) {
        if (attempt === 3 || !(err instanceof TypeError)) throw err
        retries++
        console.error(`throughput:   POST failed (${describe(err)}), sent again`)
      }
    }
  })
  const ended = new Map<string, { at: number; status: string }>()
  const wanted = new Set(ids)
  const deadline = Date.now() + BURST_TIMEOUT_MS
  const lister = async () => {
    while (ended.size < ids.length && Date.now() < deadline) {
      for (let offset = 0; offset < ids.length + 100; offset += 100) {
        const answer = await release.client.request('GET', `/commands?limit=100&offset=${offset}`).catch((err: unknown) => {
          console.error(`throughput:   listing failed (${describe(err)}), asked again`)
          return undefined
        })
        if (!answer) break
        const { status, body: page } = answer
        if (status !== 200 || page.commands.length === 0) break
        for (const command of page.commands as Array<{ command_id: string; status: string }>) {
          if (!wanted.has(command.command_id) || ended.has(command.command_id)) continue
          if (command.status === 'SUCCESS' || command.status === 'FAILED') ended.set(command.command_id, { at: Date.now(), status: command.status })
        }
      }
      await sleep(LIST_EVERY_MS)
    }
  }
  try {
    await Promise.race([lister(), waitUntil(() => ended.size >= ids.length, `${ids.length} commands to end (${ended.size} so far)`)])
  } finally {
    census.stop()
  }
  return {
    variant: 'ffkube',
    submitted,
    ended: ids.map((id) => ended.get(id)?.at ?? NaN),
    failed: [...ended.values()].filter((e) => e.status !== 'SUCCESS').length,
    maxRunning: census.maxRunning,
    unschedulable: census.unschedulable,
    load: [load0, loadavg()[0]!],
    retries,
  }
}

/** An error with its cause (undici's "fetch failed" says what failed only there). */
function describe(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause
  return `${String(err)}${cause ? `: ${String(cause)}` : ''}`
}

async function bareBurst(release: Release, inputUrl: string, run: string, count = COMMANDS): Promise<Omit<Burst, 'cpu' | 'requests'>> {
  const load0 = loadavg()[0]!
  const core = release.kc.makeApiClient(CoreV1Api)
  const census: PodCensus = await watchPods(release.kc, BARE_NAMESPACE, (pod) => pod.metadata?.name, `${LABEL_BARE_RUN}=${run}`)
  const resources = (release.values.runners as { resources: object }).resources
  const s3 = release.s3
  const submitted: number[] = []
  const names = await submitInTens(count, async (i) => {
    const name = `${run}-${i}`
    submitted[i] = Date.now()
    await core.createNamespacedPod({
      namespace: BARE_NAMESPACE,
      body: buildBareRemuxPod({
        name, namespace: BARE_NAMESPACE, run, image: release.images.runner.ref, inputUrl, resources, runAsUser: RUNNER_UID,
        s3: { endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, key: `bench-bare/${run}/${i}.mkv`, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      }),
    })
    return name
  })
  try {
    await waitUntil(() => census.ended.size >= names.length, `${names.length} bare pods to end (${census.ended.size} so far)`)
  } finally {
    census.stop()
  }
  const burst: Omit<Burst, 'cpu' | 'requests'> = {
    variant: 'bare pods',
    submitted,
    ended: names.map((n) => census.ended.get(n)?.at ?? NaN),
    failed: [...census.ended.values()].filter((e) => e.phase !== 'Succeeded').length,
    maxRunning: census.maxRunning,
    unschedulable: census.unschedulable,
    load: [load0, loadavg()[0]!],
    retries: 0,
  }
  await release.kubectl(['-n', BARE_NAMESPACE, 'delete', 'pods', '-l', `${LABEL_BARE_RUN}=${run}`, '--wait=true'])
  return burst
}

interface Figures {
  makespanS: number
  perSecond: number
  /** Ends per second between the 10th and the 90th end. */
  sustained: number
  p50LatencyS: number
}

function figures(b: Burst): Figures {
  const first = Math.min(...b.submitted)
  const ends = [...b.ended].sort((x, y) => x - y)
  const last = ends[ends.length - 1]!
  const lo = Math.floor(ends.length * 0.1)
  const hi = Math.ceil(ends.length * 0.9) - 1
  const latencies = b.ended.map((at, i) => at - b.submitted[i]!).sort((x, y) => x - y)
  return {
    makespanS: (last - first) / 1000,
    perSecond: ends.length / ((last - first) / 1000),
    sustained: hi > lo ? (hi - lo) / ((ends[hi]! - ends[lo]!) / 1000) : NaN,
    p50LatencyS: percentile(latencies, 50) / 1000,
  }
}

function printBursts(bursts: Burst[]): void {
  const header = ['burst', 'variant', 'n', 'FAILED', 'makespan s', 'per s', 'sustained per s (10th→90th end)', 'p50 submit→end s', 'pods running at once, max', 'unschedulable pods', 'submits retried', 'load at start → end']
  const lines = bursts.map((b, i) => {
    const f = figures(b)
    return [String(i + 1), b.variant, String(b.ended.filter((e) => !Number.isNaN(e)).length), String(b.failed), f.makespanS.toFixed(1), f.perSecond.toFixed(2), f.sustained.toFixed(2), f.p50LatencyS.toFixed(1), String(b.maxRunning), String(b.unschedulable), String(b.retries), `${b.load[0].toFixed(1)} → ${b.load[1].toFixed(1)}`]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const format = (cells: string[]) => cells.map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')
  console.log(format(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
  for (const line of lines) console.log(format(line))
  const mean = (variant: Variant, pick: (f: Figures) => number) => {
    const values = bursts.filter((b) => b.variant === variant).map((b) => pick(figures(b)))
    return values.reduce((a, v) => a + v, 0) / values.length
  }
  console.log('')
  console.log('CPU per command over each burst, s (runner pods: the pods that came and went, runners or bare pods; pod …: the lasting pods by Deployment; the rest: processes this bench started)')
  const groups = [...new Set(bursts.flatMap((b) => Object.keys(b.cpu)))]
  for (const [i, b] of bursts.entries()) {
    const total = Object.values(b.cpu).reduce((a, v) => a + v, 0)
    console.log(`  ${i + 1} ${b.variant.padEnd(9)} total ${(total / 1000 / b.ended.length).toFixed(2)}: ${groups.map((g) => `${g} ${((b.cpu[g] ?? 0) / 1000 / b.ended.length).toFixed(2)}`).join(', ')}`)
  }
  console.log('')
  console.log('The API server\'s requests and watch events per command over each burst (every client: operator, kubelet, scheduler, controllers, bench)')
  printRequestsPerCommand(bursts.map((b, i) => ({ label: `${i + 1} ${b.variant}`, commands: b.ended.length, counts: b.requests })))
  console.log('')
  for (const [name, pick] of [['per s', (f: Figures) => f.perSecond], ['sustained per s', (f: Figures) => f.sustained]] as const) {
    const ours = mean('ffkube', pick)
    const ceiling = mean('bare pods', pick)
    console.log(`${name}: ffkube ${ours.toFixed(2)} / bare pods ${ceiling.toFixed(2)} = ${(100 * ours / ceiling).toFixed(0)} % of the ceiling (target ≥ 70 %)`)
  }
}

async function main(): Promise<void> {
  const release = await installBenchRelease(t, (line) => console.error(`throughput: ${line}`), { businessConcurrency: ACCOUNT_CONCURRENCY })
  const dir = await scratchDir(t, 'ffkube-bench-throughput-')
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })
  const inputs = await startInputServer(t, [clip], [PUBLIC_IP])
  const inputUrl = inputs.url(PUBLIC_IP, clip)
  await release.kubectl(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: BARE_NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } },
  }))
  const node = await release.kubectlJson<V1Node>(['get', 'node', release.cluster.nodeName])
  console.error(`throughput: node allocatable ${JSON.stringify(node.status?.allocatable)}; runner requests ${JSON.stringify((release.values.runners as { resources: unknown }).resources)}`)

  // Ten of each first, so neither variant pays the node's first start of the image.
  await bareBurst(release, inputUrl, 'warm', 10)
  await ffkubeBurst(release, inputUrl, 10)
  const bursts: Burst[] = []
  const order: Variant[] = []
  for (let r = 0; r < ROUNDS; r++) order.push(...(r % 2 === 0 ? ['bare pods', 'ffkube'] as const : ['ffkube', 'bare pods'] as const))
  for (const [i, variant] of order.entries()) {
    console.error(`throughput: burst ${i + 1}/${order.length}: ${COMMANDS} × ${variant} (load ${loadavg()[0]!.toFixed(1)})`)
    try {
      bursts.push(await withCpu(release, () => (variant === 'ffkube' ? ffkubeBurst(release, inputUrl) : bareBurst(release, inputUrl, `b${i}`))))
    } catch (err) {
      console.error(`throughput: the release's pods when burst ${i + 1} failed:\n${await release.kubectl(['get', 'pods', '-A', '-o', 'wide']).catch(String)}`)
      console.error(`throughput: the release's events:\n${await release.kubectl(['-n', NAMESPACE, 'get', 'events']).catch(String)}`)
      throw err
    }
    const f = figures(bursts.at(-1)!)
    console.error(`throughput:   ${f.makespanS.toFixed(1)} s, ${f.perSecond.toFixed(2)}/s, sustained ${f.sustained.toFixed(2)}/s, ${bursts.at(-1)!.failed} FAILED`)
  }
  console.log(`${COMMANDS} remuxes per burst (2 s 320×240 clip, -map 0 -c copy), account concurrency ${ACCOUNT_CONCURRENCY}, API and worker CPU requests ${SERVICE_CPU_REQUEST}; ${new Date().toISOString()}`)
  printBursts(bursts)
}

await runBench(main)
