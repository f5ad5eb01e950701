import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

function waitForStatus(api: Client, commandId: string, status: string): Promise<true> {
  return eventually(`command ${commandId} ${status}`, async () => (await api.request('GET', `/commands/${commandId}`)).body.status === status)
}

t.test('a command in flight when the service is SIGKILLed still ends after a restart', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [first, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'long.mp4'), { seconds: 6, width: 1280, height: 720 })])
  const media = await serveFiles(t, [clip])
  let api = new Client(first)
  const { command_id } = await api.post('/run-ffmpeg-command', {
    input_files: { in_v: media.url(clip) },
    output_files: { out_x: 'x.mp4' },
    // Slow on purpose: long enough to be killed while ffmpeg runs.
    ffmpeg_command: 'ffmpeg -i {{in_v}} -c:v libx264 -preset veryslow -c:a copy {{out_x}}',
  })
  await waitForStatus(api, command_id, 'PROCESSING')
  const pid = first.child.pid as number
  const runners = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).split(' ').filter(Boolean)
  t.ok(runners.length > 0, 'the service has runner children')
  first.child.kill('SIGKILL')
  await first.exited
  // The warm runners notice their parent is gone (stdin closes) and kill themselves with their ffmpeg.
  await eventually('every runner of the killed service gone', () => runners.every((child) => !existsSync(`/proc/${child}`)))
  t.pass('no runner outlives the killed service')

  const second = await startService(t, environment)
  api = new Client(second)
  const done = await api.waitForCommand(command_id, 180_000)
  t.ok(done.status === 'SUCCESS' || done.status === 'FAILED', `ended ${done.status}`)
  t.equal(done.status, 'SUCCESS', 'the interrupted command is run again once and succeeds')
  t.match(done.output_files?.out_x, { width: 1280, height: 720 })
  t.match(second.log(), /interrupted by a restart: running it again/, 'the second start took the command over')
})

t.test('a runner past COMMAND_DEADLINE_SECONDS is killed and its command ends FAILED with TIMEOUT', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { COMMAND_DEADLINE_SECONDS: '2' })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'long.mp4'), { seconds: 6, width: 1280, height: 720 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const { command_id } = await api.post('/run-ffmpeg-command', {
    input_files: { in_v: media.url(clip) },
    output_files: { out_x: 'x.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -c:v libx264 -preset veryslow -c:a copy {{out_x}}',
  })
  const done = await api.waitForCommand(command_id, 30_000)
  t.match(done, { status: 'FAILED', error_status: 'TIMEOUT', error_message: /within 2 s/ })
})
