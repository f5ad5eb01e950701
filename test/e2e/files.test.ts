import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { HeadObjectCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { downloadAndProbe } from './download.js'
import { Client, serviceEnvironment, startService } from './service.js'

t.test('files: store-file and upload end STORED with metadata; deletes remove the bytes and keep the records', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const s3 = environment.s3.client()
  t.teardown(() => s3.destroy())
  const objectExists = async (url: string) => {
    const key = decodeURIComponent(new URL(url).pathname.split('/').slice(2).join('/'))
    return s3.send(new HeadObjectCommand({ Bucket: environment.s3.bucket, Key: key })).then(() => true, () => false)
  }

  t.test('store-file fetches the URL, stores and probes it', async (t) => {
    const { file_id } = await api.post('/files/store-file', { file_url: media.url(clip) })
    const file = await api.waitForFile(file_id)
    t.match(file, { status: 'STORED', service_store_type: 'STORED_FILE', width: 320, height: 240, codec: 'h264', file_type: 'video', mime_type: 'video/mp4', error_status: null })
    t.match(await downloadAndProbe(file.storage_url, dir, 'stored.mp4'), { width: 320 })

    const deleted = await api.request('DELETE', `/files/${file_id}`)
    t.same(deleted.body, { deleted: true, file_id })
    t.equal(await objectExists(file.storage_url), false, 'the object is gone from the bucket')
    t.match((await api.request('GET', `/files/${file_id}`)).body, { file_id, status: 'STORED', is_deleted: true, storage_url: null }, 'the record is kept')
    t.equal((await api.request('DELETE', `/files/${file_id}`)).status, 404, 'a second delete is 404')
  })

  t.test('store-file of a missing URL ends FAILED with error fields', async (t) => {
    const { file_id } = await api.post('/files/store-file', { file_url: media.url('gone.mp4') })
    t.match(await api.waitForFile(file_id), { status: 'FAILED', error_status: 'INPUT_HTTP_STATUS', error_message: /file_url/, storage_url: null })
  })

  t.test('upload streams to the bucket, then the processor probes it', async (t) => {
    const response = await api.upload(await readFile(clip), 'my clip.mp4', 'video/mp4')
    t.equal(response.status, 200)
    const { file_id } = response.body as { file_id: string }
    const file = await api.waitForFile(file_id)
    t.match(file, { status: 'STORED', service_store_type: 'UPLOAD', width: 320, height: 240, codec: 'h264', file_format: 'mp4' })
    t.ok(file.duration > 0.9 && file.duration < 1.2)
    t.match(await downloadAndProbe(file.storage_url, dir, 'uploaded.mp4'), { width: 320 })
  })

  t.test('DELETE /commands/:id/files removes every managed output and keeps the records', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_v: media.url(clip) },
      output_files: { out_a: 'a.mp4', out_b: 'b.jpg' },
      ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_a}} -frames:v 1 {{out_b}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    const urls = [done.output_files.out_a.storage_url, done.output_files.out_b.storage_url]
    for (const url of urls) t.equal(await objectExists(url), true)
    const answer = await api.request('DELETE', `/commands/${command_id}/files`)
    t.same(answer.body, { deleted: true, files_deleted: 2 })
    for (const url of urls) t.equal(await objectExists(url), false, 'the output object is gone')
    const after = await api.request('GET', `/commands/${command_id}`)
    t.match(after.body, { status: 'SUCCESS', output_files: { out_a: { is_deleted: true, storage_url: null }, out_b: { is_deleted: true, storage_url: null } } })
    t.match((await api.request('GET', `/files/${done.output_files.out_a.file_id}`)).body, { service_store_type: 'OUTPUT', is_deleted: true, storage_url: null })
  })
})
