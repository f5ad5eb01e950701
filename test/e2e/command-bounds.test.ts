/**
 * Local mode bounds what one command may take: a command string that loops
 * its input forever ends FAILED / TIMEOUT at COMMAND_DEADLINE_SECONDS, and one
 * that fills its work directory ends FAILED / WORK_DIR_LIMIT_EXCEEDED at
 * COMMAND_WORK_DIR_MAX_BYTES. Each bound is set small in its own service, with
 * the other left at its default, so each command can only end by its own bound.
 */
import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

t.test('local mode ends a command at its bounds', async (t) => {
  const dir = await scratchDir(t)
  const [deadlineEnv, diskEnv, clip] = await Promise.all([
    serviceEnvironment(t, { COMMAND_DEADLINE_SECONDS: '2', LOCAL_RUNNER_CONCURRENCY: '1' }),
    serviceEnvironment(t, { COMMAND_WORK_DIR_MAX_BYTES: String(2 * 1024 * 1024), LOCAL_RUNNER_CONCURRENCY: '1' }),
    makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 64, height: 64 }),
  ])
  const [deadlineService, diskService, media] = await Promise.all([startService(t, deadlineEnv), startService(t, diskEnv), serveFiles(t, [clip])])

  t.test('a command looping its input forever ends FAILED / TIMEOUT', async (t) => {
    const api = new Client(deadlineService)
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_v: media.url(clip) },
      output_files: {},
      ffmpeg_command: 'ffmpeg -stream_loop -1 -i {{in_v}} -vf scale=16:16 -f null -',
    })
    const done = await api.waitForCommand(command_id, 120_000)
    t.match(done, { status: 'FAILED', error_status: 'TIMEOUT', error_message: /did not finish within 2 s/ })
    t.notOk(done.output_files, 'nothing was stored')
  })

  t.test('a command filling its work directory ends FAILED / WORK_DIR_LIMIT_EXCEEDED, and the next command runs', async (t) => {
    const api = new Client(diskService)
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_v: media.url(clip) },
      output_files: { out_x: 'x.mkv' },
      ffmpeg_command: 'ffmpeg -stream_loop -1 -i {{in_v}} -c copy {{out_x}}',
    })
    const done = await api.waitForCommand(command_id, 120_000)
    t.match(done, { status: 'FAILED', error_status: 'WORK_DIR_LIMIT_EXCEEDED', error_message: /work-directory limit of 2097152 bytes \(2 MiB\)/ })
    t.notOk(done.output_files, 'nothing was stored')

    const next = await api.post('/run-ffmpeg-command', {
      input_files: { in_v: media.url(clip) },
      output_files: { out_x: 'x.mkv' },
      ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}',
    })
    t.match(await api.waitForCommand(next.command_id, 120_000), { status: 'SUCCESS' }, 'the killed runner was replaced')
  })
})
