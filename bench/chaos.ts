/**
 * Chaos benchmark on the real single node (issue 29, item 3): a burst of
 * remux commands with no fault, then one burst per fault of the cluster
 * lane's fault set (test/cluster/faults.ts: the API, worker, leading operator
 * and a runner pod deleted; NATS and the MongoDB-wire server restarted) and
 * containerd restarted, each
 * applied while the burst's first command is held in its fetch phase. One row
 * per burst: commands, lost, duplicate webhooks, backward status steps, and
 * the largest extra latency against the no-fault burst. Needs what the
 * cluster lane needs (root, provisioning, dist/images.json):
 *
 *   npm run -s bench -- chaos       (BENCH_COMMANDS=100, BENCH_STREAMS=24, BENCH_FAULTS=word,…)
 *
 * Every command is watched by listing the account's commands each second; the
 * first BENCH_STREAMS of a burst also through their event streams (an account
 * may hold 32 at once). A command's latency is submit → terminal as first seen
 * by either; its extra latency is that minus the latency of the no-fault
 * burst's command at the same place in the submit order.
 */
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { watchCommand, type WatchedCommand } from '../test/cluster/command-watch.js'
import { CONTAINERD_RESTART, FAULTS, recovered, type Fault } from '../test/cluster/faults.js'
import { startInputServer, startWebhookReceiver, type InputServer, type WebhookReceiver } from '../test/cluster/host-servers.js'
import { PUBLIC_IP, type Release } from '../test/cluster/release.js'
import { backwardSteps, TERMINAL_STATUSES } from '../test/cluster/status-order.js'
import { makeClip } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { installBenchRelease } from './bench-release.js'
import { benchRun } from './bench-run.js'

const COMMANDS = Number(process.env.BENCH_COMMANDS ?? 100)
const STREAMS = Math.min(Number(process.env.BENCH_STREAMS ?? 24), COMMANDS)
const BURST_TIMEOUT_MS = Number(process.env.BENCH_BURST_TIMEOUT_SECONDS ?? 900) * 1000
/** A loaded node may take minutes to start a replaced pod: the bench waits, and reports what it waited for. */
const RECOVERY_TIMEOUT_MS = Number(process.env.BENCH_RECOVERY_TIMEOUT_SECONDS ?? 600) * 1000

const { t, run: runBench } = benchRun()

interface Burst {
  label: string
  ids: string[]
  submittedAt: Map<string, number>
  /** Statuses each command showed in the listing, in order. */
  listed: Map<string, string[]>
  /** error_status and the start of error_message of each command listed FAILED. */
  errors: Map<string, string>
  endedAt: Map<string, number>
  streams: WatchedCommand[]
}

interface Row {
  fault: string
  commands: number
  lost: number
  duplicates: number
  backward: number
  failed: number
  /** The FAILED commands' error_status, counted. */
  errors: Map<string, number>
  /** Commands with a pod whose run container never started, retried by their Job (the operator's PodRetried Event). */
  retried: number
  /** From the fault to the release serving again, ms (0 for the baseline). */
  recoveryMs: number
  /** ms, by submit order; NaN for a command that did not end. */
  latencies: number[]
  /** The host's 1-min load average as the burst started and ended. */
  load: [number, number]
}

interface World {
  release: Release
  inputs: InputServer
  receiver: WebhookReceiver
  clip: string
}

const remux = (input: string) => ({
  input_files: { in_video: input },
  output_files: { out_video: 'remux.mkv' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -map 0 -c copy {{out_video}}',
})

/** Lists the account's newest commands page by page until every id of the burst has been seen once. */
async function listOnce(release: Release, burst: Burst): Promise<void> {
  const wanted = new Set(burst.ids)
  for (let offset = 0; wanted.size > 0 && offset < burst.ids.length + 200; offset += 100) {
    const { status, body } = await release.client.request('GET', `/commands?limit=100&offset=${offset}`)
    if (status !== 200 || body.commands.length === 0) return
    for (const command of body.commands as Array<{ command_id: string; status: string; error_status?: string | null; error_message?: string | null }>) {
      if (!wanted.delete(command.command_id)) continue
      const seen = burst.listed.get(command.command_id)!
      seen.push(command.status)
      if (command.status === 'FAILED') burst.errors.set(command.command_id, `${command.error_status ?? '(none)'} (${(command.error_message ?? '').slice(0, 160)})`)
      if (TERMINAL_STATUSES.has(command.status) && !burst.endedAt.has(command.command_id)) burst.endedAt.set(command.command_id, Date.now())
    }
  }
}

/** How many of `ids` the operator recorded a PodRetried Event for (operator/run-container-start.ts). */
async function retriedCommands(release: Release, ids: readonly string[]): Promise<number> {
  const events = await release.kubectlJson<{ items: Array<{ reason?: string; regarding?: { name?: string } }> }>(['get', 'events.events.k8s.io', '-A'])
  const burst = new Set(ids)
  return events.items.filter((event) => event.reason === 'PodRetried' && burst.has(event.regarding?.name ?? '')).length
}

async function submitAll(world: World, burst: Burst, gate: string): Promise<void> {
  const submit = async (input: string) => {
    const submittedAt = Date.now()
    const { command_id } = await world.release.client.post('/run-ffmpeg-command', remux(input))
    burst.submittedAt.set(command_id, submittedAt)
    burst.listed.set(command_id, [])
    return command_id as string
  }
  burst.ids.push(await submit(world.inputs.url(PUBLIC_IP, world.clip, gate)))
  const clipUrl = world.inputs.url(PUBLIC_IP, world.clip)
  // Ten at a time: a client's burst, not a flood of connections to one API pod.
  for (let i = 1; i < COMMANDS; i += 10) {
    burst.ids.push(...await Promise.all(Array.from({ length: Math.min(10, COMMANDS - i) }, () => submit(clipUrl))))
  }
}

async function runBurst(world: World, label: string, fault: Fault | null): Promise<Row> {
  const { release, inputs, receiver } = world
  const loadAtStart = loadavg()[0]!
  const burst: Burst = { label, ids: [], submittedAt: new Map(), listed: new Map(), errors: new Map(), endedAt: new Map(), streams: [] }
  const gate = `chaos-${label.replace(/\W+/g, '-')}`
  await submitAll(world, burst, gate)
  burst.streams = burst.ids.slice(0, STREAMS).map((id) => watchCommand(release, id, { poll: false }))
  const deadline = Date.now() + BURST_TIMEOUT_MS
  let listing = true
  const lister = (async () => {
    while (listing && burst.endedAt.size < burst.ids.length && Date.now() < deadline) {
      await listOnce(release, burst).catch(() => undefined)
      await sleep(1000)
    }
  })()
  const faultAt = Date.now()
  let recoveryMs = 0
  try {
    await inputs.requested(gate)
    if (fault) {
      await fault.apply({ release, held: burst.ids[0]!, openGate: (how) => inputs.release(gate, how) })
      await recovered(release, RECOVERY_TIMEOUT_MS)
      recoveryMs = Date.now() - faultAt
    } else {
      inputs.release(gate)
    }
    await lister
  } catch (err) {
    // Loops left running would keep the process alive after its teardowns.
    burst.streams.forEach((s) => s.stop())
    throw err
  } finally {
    listing = false
  }
  const lateStreams = new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref())
  await Promise.race([Promise.all(burst.streams.map((s) => s.ended)), lateStreams])
  burst.streams.forEach((s) => s.stop())
  for (const s of burst.streams) {
    // The stream may have seen the end before the listing did.
    const listed = burst.endedAt.get(s.commandId)
    if (s.streamEndedAt !== undefined) burst.endedAt.set(s.commandId, Math.min(s.streamEndedAt, listed ?? Infinity))
  }
  const ended = burst.ids.filter((id) => burst.endedAt.has(id))
  const webhooksBy = Date.now() + 120_000
  while (Date.now() < webhooksBy && !ended.every((id) => receiver.deliveries.some((d) => d.headers['x-webhook-id'] === `whd_${id}`))) await sleep(500)
  const counts = new Map<string, number>()
  for (const d of receiver.deliveries) {
    const id = String(JSON.parse(d.raw.toString('utf8')).data?.command_id)
    counts.set(id, (counts.get(id) ?? 0) + 1)
  }
  const final = (id: string) => burst.listed.get(id)!.at(-1)
  return {
    fault: label,
    commands: burst.ids.length,
    lost: burst.ids.length - ended.length,
    duplicates: burst.ids.reduce((sum, id) => sum + Math.max(0, (counts.get(id) ?? 0) - 1), 0),
    backward: burst.ids.reduce((sum, id) => sum + backwardSteps(burst.listed.get(id)!).length, 0) +
      burst.streams.reduce((sum, s) => sum + backwardSteps(s.streamed).length, 0),
    failed: ended.filter((id) => final(id) === 'FAILED').length,
    errors: [...burst.errors.values()].reduce((counts, e) => counts.set(e, (counts.get(e) ?? 0) + 1), new Map<string, number>()),
    retried: await retriedCommands(release, burst.ids),
    recoveryMs,
    latencies: burst.ids.map((id) => (burst.endedAt.get(id) ?? NaN) - burst.submittedAt.get(id)!),
    load: [loadAtStart, loadavg()[0]!],
  }
}

function printRows(rows: Row[]): void {
  const baseline = rows[0]!
  const header = ['fault', 'commands', 'lost', 'duplicates', 'backward steps', 'FAILED', 'recovery s', 'largest latency s', 'largest extra latency s', 'load start → end']
  const lines = rows.map((row) => {
    const largest = Math.max(...row.latencies)
    const extra = row === baseline ? 0 : Math.max(...row.latencies.map((ms, i) => ms - (baseline.latencies[i] ?? NaN)))
    return [row.fault, String(row.commands), String(row.lost), String(row.duplicates), String(row.backward), String(row.failed), (row.recoveryMs / 1000).toFixed(1), (largest / 1000).toFixed(1), (extra / 1000).toFixed(1), `${row.load[0].toFixed(1)} → ${row.load[1].toFixed(1)}`]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const format = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')
  console.log(format(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
  for (const line of lines) console.log(format(line))
  for (const row of rows.filter((r) => r.retried > 0)) console.log(`retried under "${row.fault}": ${row.retried} command(s) had a pod whose run container never started`)
  for (const row of rows.filter((r) => r.errors.size > 0)) {
    console.log(`FAILED under "${row.fault}": ${[...row.errors].map(([error, n]) => `${error} ×${n}`).join(', ')}`)
  }
}

async function main(): Promise<void> {
  const release = await installBenchRelease(t, (line) => console.error(`chaos: ${line}`))
  const dir = await scratchDir(t, 'ffkube-chaos-')
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })
  const inputs = await startInputServer(t, [clip], [PUBLIC_IP])
  const receiver = await startWebhookReceiver(t, PUBLIC_IP)
  const put = await release.client.request('PUT', '/webhook-config', { url: receiver.url, secret: 'chaos-bench-webhook-secret-0123' })
  if (put.status !== 200) throw new Error(`PUT /webhook-config answered ${put.status}`)
  const world: World = { release, inputs, receiver, clip }
  const rows: Row[] = []
  const only = process.env.BENCH_FAULTS?.split(',')
  const faults = [...FAULTS, CONTAINERD_RESTART].filter((f) => !only || only.some((word) => f.name.includes(word)))
  for (const [label, fault] of [['none (baseline)', null] as const, ...faults.map((f) => [f.name, f] as const)]) {
    console.error(`chaos: burst of ${COMMANDS}, fault: ${label}`)
    rows.push(await runBurst(world, label, fault))
  }
  console.log(`${COMMANDS} remuxes per burst (2 s clip, -c copy), the first held in its fetch phase through the fault; event streams on the first ${STREAMS}`)
  printRows(rows)
}

await runBench(main)
