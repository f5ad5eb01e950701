import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { fileMembers } from '../../api/files/file-document.js'
import { NO_MEDIA_FACTS, type FileDocument } from '../../api/files/file-document.js'
import { startApi } from '../harness/api.js'

const BODY = {
  input_files: { in_video: 'https://media.example.com/clip.mp4' },
  output_files: { out_small: 'small.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_small}}',
}

t.test('reading, listing and cleaning up commands', async (t) => {
  let now = new Date('2026-01-01T00:00:00Z')
  const api = await startApi(t, { clock: () => now })
  const mine = await api.createAccount('growth')
  const other = await api.createAccount('growth')
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, key = mine.api_key, payload?: object) =>
    api.app.inject({ method, url: `/api/v1${url}`, headers: { 'x-api-key': key }, ...(payload ? { payload } : {}) })

  // Five commands one second apart, so "newest first" has one right answer.
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    now = new Date(now.getTime() + 1_000)
    const res = await call('POST', '/run-ffmpeg-command', mine.api_key, { ...BODY, metadata: { i } })
    ids.push(res.json().command_id)
  }
  const theirs = (await call('POST', '/run-ffmpeg-command', other.api_key, BODY)).json().command_id as string

  t.test('GET /commands/:id of another account is 404, like a missing one', async (t) => {
    const res = await call('GET', `/commands/${theirs}`)
    t.equal(res.statusCode, 404)
    t.equal(res.json().error, 'NOT_FOUND')
    const missing = await call('GET', '/commands/00000000-0000-4000-8000-000000000000')
    t.equal(missing.statusCode, 404)
    t.equal((await call('GET', '/commands/not-a-uuid')).statusCode, 404)
  })

  t.test('lists the account’s commands newest first with the default page', async (t) => {
    const res = await call('GET', '/commands')
    t.equal(res.statusCode, 200)
    const body = res.json()
    t.equal(body.limit, 50)
    t.equal(body.offset, 0)
    t.same(body.commands.map((c: { command_id: string }) => c.command_id), [...ids].reverse())
    t.notOk(body.commands.some((c: { command_id: string }) => c.command_id === theirs), 'never another account’s')
  })

  t.test('pages with limit and offset and echoes them', async (t) => {
    const res = await call('GET', '/commands?limit=2&offset=1')
    t.equal(res.statusCode, 200)
    t.same(res.json().commands.map((c: { command_id: string }) => c.command_id), [ids[3], ids[2]])
    t.equal(res.json().limit, 2)
    t.equal(res.json().offset, 1)
    t.same((await call('GET', '/commands?limit=100&offset=5')).json().commands, [])
  })

  t.test('filters by status', async (t) => {
    t.equal((await call('GET', '/commands?status=QUEUED')).json().commands.length, 5)
    t.equal((await call('GET', '/commands?status=SUCCESS')).json().commands.length, 0)
  })

  for (const query of ['limit=101', 'limit=0', 'offset=-1', 'limit=abc', 'status=DONE']) {
    t.test(`rejects ?${query} with 400`, async (t) => {
      const res = await call('GET', `/commands?${query}`)
      t.equal(res.statusCode, 400)
      t.equal(res.json().error, 'INVALID_REQUEST')
      t.match(res.json().message, /querystring\.(limit|offset|status)/)
    })
  }

  t.test('DELETE /commands/:id/files of a QUEUED command deletes nothing', async (t) => {
    const res = await call('DELETE', `/commands/${ids[0]}/files`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { deleted: true, files_deleted: 0 })
  })

  t.test('DELETE /commands/:id/files of another account’s command is 404', async (t) => {
    t.equal((await call('DELETE', `/commands/${theirs}/files`)).statusCode, 404)
    t.equal((await call('DELETE', '/commands/00000000-0000-4000-8000-000000000000/files')).statusCode, 404)
  })

  t.test('DELETE /commands/:id/files removes managed outputs and leaves external ones', async (t) => {
    // The outputs the runner's status projector records when a command succeeds (runner issue).
    const commandId = ids[1]!
    const key = `outputs/${mine.account_id}/${commandId}/small.mp4`
    await api.s3.send(new PutObjectCommand({ Bucket: api.s3Bucket, Key: key, Body: 'video bytes' }))
    const managed = outputFile({ _id: 'file_managed', account_id: mine.account_id, command_id: commandId, output_alias: 'out_small', object_key: key })
    const external = outputFile({
      _id: 'file_external',
      account_id: mine.account_id,
      command_id: commandId,
      output_alias: 'out_copy',
      storage_location: 'EXTERNAL',
      external_uri: 's3://customer/out/x/copy.mp4',
      external_object_key: 'out/x/copy.mp4',
    })
    await api.db.collection<FileDocument>('files').insertMany([managed, external])
    await api.db.collection('commands').updateOne(
      { _id: commandId as never },
      { $set: { status: 'SUCCESS', output_results: { out_small: outputMeta(managed), out_copy: outputMeta(external) } } },
    )

    const res = await call('DELETE', `/commands/${commandId}/files`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { deleted: true, files_deleted: 1 })
    await t.rejects(api.s3.send(new GetObjectCommand({ Bucket: api.s3Bucket, Key: key })), 'the managed bytes are gone')
    const poll = (await call('GET', `/commands/${commandId}`)).json()
    t.match(poll.output_files.out_small, { is_deleted: true, storage_url: null })
    t.match(poll.output_files.out_copy, { is_deleted: false, storage_location: 'EXTERNAL' })
    t.match((await call('GET', '/files/file_managed')).json(), { is_deleted: true, storage_url: null, status: 'STORED' })
    t.same((await call('DELETE', `/commands/${commandId}/files`)).json(), { deleted: true, files_deleted: 0 }, 'a second delete finds nothing left')
  })
})

function outputFile(fields: Partial<FileDocument> & Pick<FileDocument, '_id' | 'account_id'>): FileDocument {
  const at = new Date('2026-01-01T00:01:00Z')
  return {
    command_id: null,
    output_alias: null,
    filename: 'small.mp4',
    status: 'STORED',
    service_store_type: 'OUTPUT',
    storage_location: 'INTERNAL',
    object_key: null,
    storage_url: 'https://downloads.example.com/small.mp4',
    external_uri: null,
    external_object_key: null,
    is_deleted: false,
    deleted_at: null,
    expires_at: null,
    expires_on: null,
    original_file_url: null,
    ...NO_MEDIA_FACTS,
    error_status: null,
    error_message: null,
    created_at: at,
    updated_at: at,
    ...fields,
  }
}

function outputMeta(file: FileDocument) {
  return {
    file_id: file._id,
    filename: file.filename,
    storage_url: file.storage_location === 'EXTERNAL' ? null : file.storage_url,
    storage_location: file.storage_location,
    external_uri: file.external_uri,
    external_object_key: file.external_object_key,
    status: file.status,
    service_store_type: file.service_store_type,
    is_deleted: false,
    ...Object.fromEntries(Object.entries(NO_MEDIA_FACTS).filter(([k]) => !['sample_rate', 'channels'].includes(k))),
    ...fileMembers(file),
  }
}
