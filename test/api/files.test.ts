import { randomBytes } from 'node:crypto'
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { startApi } from '../harness/api.js'

/** A multipart/form-data body with the given parts, as a browser or curl -F sends it. */
function multipart(parts: { name: string; filename?: string; type?: string; data: Buffer | string }[]) {
  const boundary = `----ffkube${randomBytes(8).toString('hex')}`
  const chunks: Buffer[] = []
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`))
    chunks.push(Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` }
}

t.test('file endpoints', async (t) => {
  let now = new Date('2026-02-01T00:00:00Z')
  let nudges = 0
  const api = await startApi(t, { clock: () => now, onFilesQueued: () => (nudges += 1) })
  const mine = await api.createAccount('free')
  const other = await api.createAccount('free')
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, options: { key?: string; payload?: object | Buffer | string; contentType?: string } = {}) =>
    api.app.inject({
      method,
      url: `/api/v1${url}`,
      headers: { 'x-api-key': options.key ?? mine.api_key, ...(options.contentType ? { 'content-type': options.contentType } : {}) },
      ...(options.payload !== undefined ? { payload: options.payload } : {}),
    })
  const upload = (parts: Parameters<typeof multipart>[0], key?: string) => {
    const { payload, contentType } = multipart(parts)
    return call('POST', '/files/upload', { payload, contentType, ...(key ? { key } : {}) })
  }

  const video = randomBytes(3 * 1024 * 1024 + 17) // bigger than one multipart chunk of the parser
  let uploadedId = ''

  t.test('upload streams the file to managed storage and records it PROCESSING', async (t) => {
    const res = await upload([
      { name: 'note', data: 'a form field before the file is fine' },
      { name: 'file', filename: 'My Clip (1).mp4', type: 'video/mp4', data: video },
    ])
    t.equal(res.statusCode, 200, res.body)
    uploadedId = res.json().file_id
    t.match(uploadedId, /^file_[0-9a-f]{32}$/)
    const stored = await api.db.collection('files').findOne({ _id: uploadedId as never })
    t.match(stored, { status: 'PROCESSING', service_store_type: 'UPLOAD', filename: 'My_Clip_1_.mp4' })
    const object = await api.s3.send(new GetObjectCommand({ Bucket: api.s3Bucket, Key: stored!.object_key }))
    t.ok(Buffer.from(await object.Body!.transformToByteArray()).equals(video), 'the bytes arrived whole')
    t.equal(object.ContentType, 'video/mp4')
    t.match(stored, { processing_state: 'waiting', processing_due_at: now, processing_claim: null }, 'waiting for the file processor, due at once')
    t.equal(nudges, 1, 'which is nudged')
  })

  t.test('GET /files/:id returns the StoredFileResponse', async (t) => {
    const res = await call('GET', `/files/${uploadedId}`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), {
      file_id: uploadedId,
      storage_url: null,
      status: 'PROCESSING',
      service_store_type: 'UPLOAD',
      is_deleted: false,
      original_file_url: null,
      size_mbytes: null,
      duration: null,
      width: null,
      height: null,
      frame_rate: null,
      bitrate_video_kb: null,
      bitrate_audio_kb: null,
      sample_rate: null,
      channels: null,
      file_type: null,
      file_format: null,
      codec: null,
      pixel_format: null,
      mime_type: 'video/mp4',
      error_status: null,
      error_message: null,
      created_at: now.toISOString(),
      expires_at: '2026-02-02T00:00:00.000Z', // the free plan keeps files a day
      file_count: 1,
      files: [{ filename: 'My_Clip_1_.mp4', storage_url: null, size_mbytes: null, mime_type: 'video/mp4', external_object_key: null }],
    })
  })

  t.test('upload answers 422 when the body is not multipart', async (t) => {
    for (const [payload, contentType] of [
      [{ file: 'x' }, 'application/json'],
      ['file=x', 'application/x-www-form-urlencoded'],
      [Buffer.from('raw'), 'application/octet-stream'],
    ] as const) {
      const res = await call('POST', '/files/upload', { payload, contentType })
      t.equal(res.statusCode, 422, contentType)
      t.match(res.json(), { error: 'VALIDATION_ERROR', message: /multipart\/form-data/ })
    }
  })

  t.test('upload answers 422 when the file field is missing', async (t) => {
    const fieldsOnly = await upload([{ name: 'note', data: 'no file here' }])
    t.equal(fieldsOnly.statusCode, 422)
    t.match(fieldsOnly.json().message, /no "file" field/)
    const wrongName = await upload([{ name: 'video', filename: 'a.mp4', data: 'bytes' }])
    t.equal(wrongName.statusCode, 422)
    t.match(wrongName.json().message, /"file" field, not "video"/)
  })

  t.test('store-file records a PROCESSING STORED_FILE with its source URL, waiting for the file processor', async (t) => {
    now = new Date(now.getTime() + 1_000)
    const res = await call('POST', '/files/store-file', { payload: { file_url: 'https://media.example.com/path/talk%20final.mp4?sig=1' } })
    t.equal(res.statusCode, 200, res.body)
    const file = (await call('GET', `/files/${res.json().file_id}`)).json()
    t.match(file, { status: 'PROCESSING', service_store_type: 'STORED_FILE', original_file_url: 'https://media.example.com/path/talk%20final.mp4?sig=1', storage_url: null })
    const stored = await api.db.collection('files').findOne({ _id: res.json().file_id })
    t.match(stored, { filename: 'talk_final.mp4', processing_state: 'waiting', processing_due_at: now, processing_claim: null }, 'waiting for the file processor, due at once')
    t.equal(nudges, 2, 'which is nudged')
  })

  t.test('store-file answers 400 for a missing or mistyped file_url and 422 for a malformed one', async (t) => {
    const missing = await call('POST', '/files/store-file', { payload: {} })
    t.equal(missing.statusCode, 400)
    t.match(missing.json(), { error: 'INVALID_REQUEST', message: /file_url is required/ })
    const mistyped = await call('POST', '/files/store-file', { payload: { file_url: { href: 'https://a' } } })
    t.equal(mistyped.statusCode, 400)
    for (const file_url of ['not a url', 'ftp://media.example.com/a.mp4']) {
      const res = await call('POST', '/files/store-file', { payload: { file_url } })
      t.equal(res.statusCode, 422, file_url)
      t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^body\.file_url: must / })
    }
  })

  t.test('lists the account’s files newest first, with limit and offset', async (t) => {
    now = new Date(now.getTime() + 1_000)
    const third = (await call('POST', '/files/store-file', { payload: { file_url: 'https://media.example.com/3.mp4' } })).json().file_id
    await call('POST', '/files/store-file', { key: other.api_key, payload: { file_url: 'https://media.example.com/theirs.mp4' } })
    const all = (await call('GET', '/files')).json()
    t.equal(all.limit, 50)
    t.equal(all.offset, 0)
    t.equal(all.files.length, 3)
    t.equal(all.files[0].file_id, third)
    t.equal(all.files[2].file_id, uploadedId)
    for (const file of all.files) t.notOk(Object.keys(file).some((key) => key.startsWith('processing')), `${file.file_id}: no work-list field in the list`)
    const page = (await call('GET', '/files?limit=1&offset=2')).json()
    t.same(page.files.map((f: { file_id: string }) => f.file_id), [uploadedId])
    t.equal(page.limit, 1)
    t.equal(page.offset, 2)
    for (const query of ['limit=101', 'limit=0', 'offset=-1']) t.equal((await call('GET', `/files?${query}`)).statusCode, 400, query)
  })

  t.test('another account’s file is 404 to get and to delete', async (t) => {
    t.equal((await call('GET', `/files/${uploadedId}`, { key: other.api_key })).statusCode, 404)
    t.equal((await call('DELETE', `/files/${uploadedId}`, { key: other.api_key })).statusCode, 404)
    t.equal((await call('GET', '/files/file_00000000000000000000000000000000')).statusCode, 404)
  })

  t.test('deleting a managed file removes its bytes and keeps the record', async (t) => {
    const key = (await api.db.collection('files').findOne({ _id: uploadedId as never }))!.object_key
    const res = await call('DELETE', `/files/${uploadedId}`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { deleted: true, file_id: uploadedId })
    await t.rejects(api.s3.send(new HeadObjectCommand({ Bucket: api.s3Bucket, Key: key })), 'bytes removed')
    t.match((await call('GET', `/files/${uploadedId}`)).json(), { is_deleted: true, storage_url: null })
    t.notOk((await call('GET', '/files')).json().files.some((f: { file_id: string }) => f.file_id === uploadedId), 'hidden from the list')
    const again = await call('DELETE', `/files/${uploadedId}`)
    t.equal(again.statusCode, 404, 'already deleted is 404')
  })

  t.test('deleting an external output changes nothing', async (t) => {
    const at = new Date()
    await api.db.collection('files').insertOne({
      _id: 'file_external_output' as never,
      account_id: mine.account_id,
      command_id: null,
      output_alias: 'out_a',
      filename: 'a.mp4',
      status: 'STORED',
      service_store_type: 'OUTPUT',
      storage_location: 'EXTERNAL',
      object_key: null,
      storage_url: null,
      external_uri: 's3://customer/prefix/c/a.mp4',
      external_object_key: 'prefix/c/a.mp4',
      is_deleted: false,
      deleted_at: null,
      created_at: at,
      updated_at: at,
    })
    const res = await call('DELETE', '/files/file_external_output')
    t.equal(res.statusCode, 200)
    t.same(res.json(), { deleted: false, file_id: 'file_external_output', external: true })
    t.match(await api.db.collection('files').findOne({ _id: 'file_external_output' as never }), { is_deleted: false, external_uri: 's3://customer/prefix/c/a.mp4' })
  })
})
