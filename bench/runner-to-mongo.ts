/**
 * Runner exit → SUCCESS in MongoDB (issue 5: p99 < 250 ms), against the
 * harness's FerretDB, NATS and versitygw:
 *
 *   npm run -s bench -- runner-to-mongo      (BENCH_SAMPLES, default 200)
 *
 * Per sample, one at a time: a command accepted by the API (QUEUED in
 * MongoDB) and moved to PROCESSING by its runner's first event, as on a
 * cluster; then the upload phase's last step, done by the runner's own code:
 * NatsReporter.report(SUCCESS with one output) and close(), after which the
 * runner process exits. Timed from the start of that report (so the publish
 * counts) and from the runner's exit, until the status projector's record in
 * MongoDB reads SUCCESS. The projector announces a command's completion on
 * NATS only after its MongoDB write, so the bench stops the clock when that
 * announcement arrives (an upper bound, with no polling load on the database)
 * and then checks that the record does read SUCCESS. The projector runs as in
 * the API process: durable consumer, presigned storage_url, files record.
 */
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { MongoClient } from 'mongodb'
import { connect } from 'nats'
import { pino } from 'pino'
import { createLogger } from '../api/logger.js'
import { StatusProjector } from '../api/projector/status-projector.js'
import { COMPLETION_SUBJECT_PREFIX } from '../contracts/completion-events.js'
import type { OutputFileResult } from '../contracts/status-events.js'
import { NatsReporter } from '../runner-image/runner/report/nats-reporter.js'
import { startApi } from '../test/harness/api.js'
import { startNats } from '../test/harness/nats.js'
import { percentile, printTable } from './table.js'
import { benchRun } from './bench-run.js'

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200)
const WARMUP = 10
const { t, run: runBench } = benchRun()

const output: OutputFileResult = {
  filename: 'thumb.jpg', storage_location: 'INTERNAL', bucket: 'ffkube-test', object_key: '', size_mbytes: 0.01, duration: null,
  file_type: 'image', file_format: 'image2', codec: 'mjpeg', pixel_format: 'yuvj420p', mime_type: 'image/jpeg', width: 320, height: 240,
  frame_rate: null, bitrate_video_kb: null, bitrate_audio_kb: null, sample_rate: null, channels: null,
}

async function main(): Promise<void> {
  const [api, nats] = await Promise.all([startApi(t), startNats(t)])
  const { api_key } = await api.createAccount('business')
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.drain())
  const projector = new StatusProjector({ nats: nc, commands: api.app.commands, files: api.app.files, logger: createLogger('bench', 'silent') })
  await projector.start()
  t.teardown(() => projector.stop())
  const poller = await MongoClient.connect(api.mongo.url)
  t.teardown(() => poller.close())
  const commands = poller.db(api.mongo.dbName).collection<{ _id: string; status: string }>('commands')
  const statusOf = async (id: string) => (await commands.findOne({ _id: id }, { projection: { status: 1 } }))?.status
  const completions = new Map<string, (at: number) => void>()
  const subscription = nc.subscribe(`${COMPLETION_SUBJECT_PREFIX}.>`, {
    callback: (_err, message) => completions.get(message.subject.slice(COMPLETION_SUBJECT_PREFIX.length + 1))?.(performance.now()),
  })
  t.teardown(() => subscription.unsubscribe())
  const runnerLog = pino({ level: 'silent' })

  const fromReport: number[] = []
  const fromExit: number[] = []
  for (let i = 0; i < SAMPLES + WARMUP; i++) {
    const accepted = await api.app.inject({
      method: 'POST', url: '/api/v1/run-ffmpeg-command', headers: { 'x-api-key': api_key },
      payload: { input_files: { in_video: 'https://media.example.com/a.mp4' }, output_files: { out_thumb: 'thumb.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}' },
    })
    const commandId = (accepted.json() as { command_id: string }).command_id
    // The runner's process: its connection, its first event, then (after ffmpeg and the upload) its terminal report and exit.
    const reporter = await NatsReporter.connect({ url: nats.url, commandId, logger: runnerLog })
    await reporter.report({ type: 'PROCESSING', stage: 'FETCHING', progress: null })
    while ((await statusOf(commandId)) !== 'PROCESSING') await delay(5)
    const completed = new Promise<number>((resolve) => completions.set(commandId, resolve))
    const start = performance.now()
    await reporter.report({
      type: 'SUCCESS', ffmpeg_command_run_seconds: 0.2, failed_files: null,
      output_files: { out_thumb: { ...output, object_key: `outputs/${commandId}/thumb.jpg` } },
    })
    await reporter.close()
    const exited = performance.now()
    const stored = await completed
    const status = await statusOf(commandId)
    if (status !== 'SUCCESS') throw new Error(`${commandId} announced complete but reads ${status}`)
    if (i < WARMUP) continue // connections and the JIT warm up
    fromReport.push(stored - start)
    fromExit.push(Math.max(0, stored - exited))
  }
  fromReport.sort((a, b) => a - b)
  fromExit.sort((a, b) => a - b)
  const rows: Array<[string, string, string]> = [
    [`terminal report → SUCCESS in MongoDB, p50 (n=${fromReport.length})`, `${percentile(fromReport, 50).toFixed(1)} ms`, ''],
    ['terminal report → SUCCESS in MongoDB, p99', `${percentile(fromReport, 99).toFixed(1)} ms`, '< 250 ms'],
    ['terminal report → SUCCESS in MongoDB, max', `${fromReport[fromReport.length - 1]!.toFixed(1)} ms`, ''],
    [`runner exit → SUCCESS in MongoDB, p50 (n=${fromExit.length})`, `${percentile(fromExit, 50).toFixed(1)} ms`, ''],
    ['runner exit → SUCCESS in MongoDB, p99', `${percentile(fromExit, 99).toFixed(1)} ms`, '< 250 ms'],
  ]
  printTable(rows)
}

await runBench(main)
