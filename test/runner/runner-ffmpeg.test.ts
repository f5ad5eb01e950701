import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3'
import { stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runRunner, specOf } from './harness.js'

const PRIVATE_OK = { ALLOW_PRIVATE_NETWORKS: '1' }

t.test('the runner, end to end on real ffmpeg and S3 (versitygw)', async (t) => {
  const dir = await scratchDir(t)
  const s3 = await startS3(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 2 })
  const hd = await makeClip(join(dir, 'hd.mp4'), { seconds: 2, width: 1280, height: 720 })
  const server = await serveFiles(t, [clip, hd])

  t.test('remuxes a clip to SUCCESS with probed metadata and the object in the bucket', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_video: 'remux.mkv' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c copy {{out_video}}'],
    })
    const started = performance.now()
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    const wallSeconds = (performance.now() - started) / 1000
    t.equal(run.exitCode, 0)
    t.equal(run.terminal.type, 'SUCCESS', JSON.stringify(run.terminal))
    if (run.terminal.type !== 'SUCCESS') return
    t.equal(run.events.at(-1)?.type, 'SUCCESS', 'the terminal event comes last')
    const phases = run.terminal.runner_phase_seconds
    t.ok(phases && [phases.fetch, phases.run, phases.deliver].every((s) => typeof s === 'number' && s >= 0), `the SUCCESS event says where the runner's time went: ${JSON.stringify(phases)}`)
    if (phases) {
      t.ok(phases.run + 0.001 >= (run.terminal.ffmpeg_command_run_seconds ?? Infinity), 'the run phase holds the ffmpeg run it timed')
      t.ok(phases.fetch + phases.run + phases.deliver <= wallSeconds, 'the phases fit inside the runner process as the test timed it')
    }
    t.ok(run.events.slice(0, -1).every((e) => e.type === 'PROCESSING'), 'anything before it is progress (none when the remux ends within 250 ms)')
    t.ok(run.events.every((e) => e.command_id === spec.commandId && e.event_id.startsWith(spec.commandId)))
    t.equal(new Set(run.events.map((e) => e.event_id)).size, run.events.length, 'event ids are unique')
    const out = run.terminal.output_files.out_video
    t.ok(out)
    if (!out) return
    t.match(out, {
      filename: 'remux.mkv', storage_location: 'INTERNAL', bucket: s3.bucket, object_key: `outputs/${spec.commandId}/remux.mkv`,
      file_type: 'video', file_format: 'matroska', codec: 'h264', pixel_format: 'yuv420p', mime_type: 'video/x-matroska',
      width: 320, height: 240, frame_rate: 25,
    })
    t.ok(out.duration !== null && Math.abs(out.duration - 2) < 0.1, `duration ${out.duration}`)
    t.ok(out.size_mbytes !== null && out.size_mbytes > 0)
    // Matroska as ffmpeg writes it keeps no per-stream bitrate, and the file has both kinds of media.
    t.equal(out.bitrate_audio_kb, null)
    t.equal(out.bitrate_video_kb, null)
    t.ok(typeof run.terminal.ffmpeg_command_run_seconds === 'number' && run.terminal.ffmpeg_command_run_seconds > 0)
    const client = s3.client()
    t.teardown(() => client.destroy())
    const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: out.object_key }))
    t.equal(head.ContentType, 'video/x-matroska')
    t.ok(Math.abs(Number(head.ContentLength) / 1048576 - (out.size_mbytes ?? 0)) < 0.001)
  })

  t.test('transcodes 720p to 360p and reports progress', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(hd) },
      outputFiles: { out_small: 'small.mp4' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -vf scale=-2:360 -c:v libx264 -preset ultrafast -c:a copy {{out_small}}'],
    })
    // Every stage as its own event (progress-throttle.ts merges those within 250 ms by default).
    const run = await runRunner(dir, spec, s3, { ...PRIVATE_OK, FFKUBE_PROGRESS_INTERVAL_MS: '0' })
    t.equal(run.terminal.type, 'SUCCESS', JSON.stringify(run.terminal))
    if (run.terminal.type !== 'SUCCESS') return
    const small = run.terminal.output_files.out_small
    t.match(small, { width: 640, height: 360, codec: 'h264', file_format: 'mp4', mime_type: 'video/mp4', sample_rate: 48000, channels: 1 })
    t.ok((small?.bitrate_video_kb ?? 0) > 0 && (small?.bitrate_audio_kb ?? 0) > 0, 'mp4 keeps both bitrates')
    const stages = run.events.filter((e) => e.type === 'PROCESSING').map((e) => (e.type === 'PROCESSING' ? e.stage : ''))
    t.same([...new Set(stages)], ['FETCHING', 'RUNNING', 'PROBING', 'UPLOADING'])
    const percents = run.events.flatMap((e) => (e.type === 'PROCESSING' && e.progress !== null ? [e.progress] : []))
    t.ok(percents.length > 0, `progress ${percents.join(',')}`)
    t.ok(percents.every((p) => p >= 0 && p < 100))
  })

  t.test('hands a plain filename from the first chained command to the second', async (t) => {
    const spec = specOf({
      commandType: 'CHAINED_COMMAND',
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_audio: 'sound.mp3' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -t 1 -c copy part.mp4', 'ffmpeg -i part.mp4 -vn -c:a libmp3lame {{out_audio}}'],
    })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.equal(run.terminal.type, 'SUCCESS', JSON.stringify(run.terminal))
    if (run.terminal.type !== 'SUCCESS') return
    const audio = run.terminal.output_files.out_audio
    t.match(audio, { file_type: 'audio', codec: 'mp3', mime_type: 'audio/mpeg', width: null, height: null, bitrate_video_kb: null })
    t.ok(audio?.duration !== null && Math.abs((audio?.duration ?? 0) - 1) < 0.1, `duration ${audio?.duration}`)
    t.notOk(Object.keys(run.terminal.output_files).includes('part.mp4'), 'intermediate files are not outputs')
  })

  t.test('ends FAILED with error fields on a broken ffmpeg argument and stops the chain', async (t) => {
    const spec = specOf({
      commandType: 'CHAINED_COMMAND',
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_video: 'x.mp4' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v nosuchencoder part.mp4', 'ffmpeg -i part.mp4 -c copy {{out_video}}'],
    })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.equal(run.exitCode, 1)
    t.match(run.terminal, { type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: /^command 1: ffmpeg exited with \d+: .*nosuchencoder/ })
    const work = join(dir, `work-${spec.commandId}`)
    await t.rejects(stat(join(work, 'outputs', 'x.mp4')), 'the second command never ran')
  })

  t.test('refuses a hostile command before fetching anything', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_video: 'x.mp4' },
      ffmpegCommands: ['ffmpeg -i /etc/passwd -c copy {{out_video}}'],
    })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.match(run.terminal, { type: 'FAILED', error_status: 'INVALID_COMMAND', error_message: /-i \/etc\/passwd: absolute paths/ })
    t.notOk(run.events.some((e) => e.type === 'PROCESSING' && e.stage === 'FETCHING'), 'no fetch started')
  })

  t.test('refuses a loopback input when private networks are not allowed', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_video: 'x.mp4' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c copy {{out_video}}'],
    })
    const run = await runRunner(dir, spec, s3)
    t.match(run.terminal, { type: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS', error_message: /input in_video: 127.0.0.1 is a loopback/ })
  })

  t.test('reports an unreachable input', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url('missing.mp4') },
      outputFiles: { out_video: 'x.mp4' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c copy {{out_video}}'],
    })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.match(run.terminal, { type: 'FAILED', error_status: 'INPUT_HTTP_STATUS', error_message: /input in_video: .* answered HTTP 404/ })
  })

  t.test('reports an input over the size limit', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_video: 'x.mp4' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c copy {{out_video}}'],
    })
    const run = await runRunner(dir, spec, s3, { ...PRIVATE_OK, FFKUBE_INPUT_MAX_BYTES: '1000' })
    t.match(run.terminal, { type: 'FAILED', error_status: 'INPUT_TOO_LARGE' })
  })

  t.test('reads storage credentials from a file at upload time, and fails cleanly with wrong ones', async (t) => {
    const spec = () => specOf({ inputFiles: { in_video: server.url(clip) }, outputFiles: { out_video: 'c.mp4' }, ffmpegCommands: ['ffmpeg -i {{in_video}} -c copy {{out_video}}'] })
    const good = join(dir, 'creds.json')
    await writeFile(good, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
    const fromFile = await runRunner(dir, spec(), s3, { ...PRIVATE_OK, S3_ACCESS_KEY_ID: '', S3_SECRET_ACCESS_KEY: '', S3_CREDENTIALS_FILE: good })
    t.equal(fromFile.terminal.type, 'SUCCESS', JSON.stringify(fromFile.terminal))
    const wrongSecret = 'wrong-secret-0123456789abcdef'
    const bad = join(dir, 'bad.json')
    await writeFile(bad, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: wrongSecret }))
    const refused = await runRunner(dir, spec(), s3, { ...PRIVATE_OK, S3_ACCESS_KEY_ID: '', S3_SECRET_ACCESS_KEY: '', S3_CREDENTIALS_FILE: bad })
    t.match(refused.terminal, { type: 'FAILED', error_status: 'UPLOAD_FAILED', error_message: /upload of c.mp4 failed/ })
    t.notOk(refused.raw.includes(wrongSecret), 'the secret is in no event')
  })

  t.test('kills ffmpeg at the deadline and ends FFMPEG_TIMEOUT', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: {},
      ffmpegCommands: ['ffmpeg -stream_loop -1 -i {{in_video}} -f null -'],
    })
    const started = Date.now()
    const run = await runRunner(dir, spec, s3, { ...PRIVATE_OK, FFKUBE_FFMPEG_TIMEOUT_SECONDS: '1' })
    t.match(run.terminal, { type: 'FAILED', error_status: 'FFMPEG_TIMEOUT', error_message: /did not finish within 1 s/ })
    t.ok(Date.now() - started < 10_000, 'the runner did not wait for the endless loop')
  })

  t.test('does not upload a byte of the object store for a failed command', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_video: 'x.mp4' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v nosuchencoder {{out_video}}'],
    })
    await runRunner(dir, spec, s3, PRIVATE_OK)
    const client = s3.client()
    t.teardown(() => client.destroy())
    await t.rejects(client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `outputs/${spec.commandId}/x.mp4` })))
  })
})
