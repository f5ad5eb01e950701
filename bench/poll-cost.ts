/**
 * What a client's polling costs the service (run after `npx tsc`:
 * `npm run -s bench -- poll-cost`): one finished command, then BENCH_GETS
 * sequential GET /commands/:id; prints the CPU ms per GET of each process
 * (bench/process-cpu.ts) and the GETs/s one client gets. This is the load a
 * client polling every few ms puts beside the command's own ffmpeg: each GET
 * authenticates (two store reads: the key, then its account) and reads the
 * record.
 */
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { Client, serviceEnvironment, startService } from '../test/e2e/service.js'
import { accountAll, cpuPerCommand, stopAccounting, watchCpu } from './process-cpu.js'
import { benchRun } from './bench-run.js'

const GETS = Number(process.env.BENCH_GETS ?? 1000)
const { t, run: runBench } = benchRun()

async function main(): Promise<void> {
  accountAll()
  const dir = await scratchDir(t, 'ffkube-bench-')
  const environment = await serviceEnvironment(t, { LOG_LEVEL: 'error' })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const { command_id } = await api.post('/run-ffmpeg-command', { input_files: { in_v: media.url(clip) }, output_files: { out_x: 'o.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}' })
  await api.waitForCommand(command_id)
  const cpuWatch = watchCpu(process.pid)
  const started = performance.now()
  for (let i = 0; i < GETS; i++) await api.request('GET', `/commands/${command_id}`)
  const seconds = (performance.now() - started) / 1000
  const perGet = Object.fromEntries(cpuPerCommand(await cpuWatch.stop(), GETS))
  process.stdout.write(`${JSON.stringify({ phase: 'CPU ms per GET /commands/:id', gets: GETS, gets_per_second: Math.round(GETS / seconds), ...perGet, load_average: loadavg()[0] })}\n`)
}

void runBench(main, stopAccounting)
