import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

t.test('GET /usage counts a real command\'s seconds and the bytes in managed storage, and drops a deleted upload', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)

  const uploaded = (await api.upload(await readFile(clip), 'clip.mp4', 'video/mp4')).body as { file_id: string }
  const upload = await api.waitForFile(uploaded.file_id)
  t.equal(upload.status, 'STORED')
  const { command_id } = await api.post('/run-ffmpeg-command', {
    input_files: { in_v: media.url(clip) },
    output_files: { out_a: 'a.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_a}}',
  })
  const done = await api.waitForCommand(command_id)
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))

  const before = await api.request('GET', '/usage?days=2')
  t.equal(before.status, 200, JSON.stringify(before.body))
  const totals = before.body.totals
  t.match(totals, { commands: 1, commands_succeeded: 1, commands_failed: 0 }, 'the command')
  // Seconds to the millisecond, as GET reports them for it.
  t.ok(Math.abs(totals.ffmpeg_seconds - done.ffmpeg_command_run_seconds) <= 0.0005, `ffmpeg_seconds ${totals.ffmpeg_seconds} ~ ${done.ffmpeg_command_run_seconds}`)
  t.ok(Math.abs(totals.total_seconds - done.total_processing_seconds) <= 0.0005, `total_seconds ${totals.total_seconds} ~ ${done.total_processing_seconds}`)
  t.equal(before.body.by_day.length, 2)
  const bytesOf = (meta: { size_mbytes: number }) => Math.round(meta.size_mbytes * 1024 * 1024)
  // The last day ends now: what is in the bucket now.
  const today = before.body.by_day.at(-1)
  t.equal(today.files_stored, 2, 'the upload and the output')
  t.ok(Math.abs(today.bytes_stored - (bytesOf(upload) + bytesOf(done.output_files.out_a))) <= 2, 'their sizes')

  t.equal((await api.request('DELETE', `/files/${uploaded.file_id}`)).status, 200)
  const after = (await api.request('GET', '/usage?days=2')).body
  t.equal(after.by_day.at(-1).files_stored, 1, 'a deleted upload is no longer stored')
  t.ok(Math.abs(after.by_day.at(-1).bytes_stored - bytesOf(done.output_files.out_a)) <= 1)

  const byDefault = (await api.request('GET', '/usage')).body
  t.equal(byDefault.days, 30, 'without days: the last 30')
  t.equal(byDefault.by_day.length, 30)
  for (const days of ['0', '367', 'x', '1.5']) {
    const refused = await api.request('GET', `/usage?days=${days}`)
    t.equal(refused.status, 400, `days=${days}`)
    t.match(refused.body, { error: 'INVALID_REQUEST', message: /days/ })
  }
})
