/**
 * A stored file's storage_url as an input (the spec: "The stored file's
 * `storage_url` can be used as an input URL in commands"), with the service
 * as `npm start` runs it: ALLOW_PRIVATE_NETWORKS off, and versitygw on loopback.
 * No input server is needed: every input is an upload or an output.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import t from 'tap'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { downloadAndProbe } from './download.js'
import { Client, serviceEnvironment, startService, type ServiceEnvironment } from './service.js'

/** A second account, made with the admin CLI against the service's database and keys. */
async function createAccount(environment: ServiceEnvironment): Promise<{ api_key: string }> {
  const child = spawn(process.execPath, ['dist/api/admin/cli.js', 'create-account', '--plan', 'business'], { env: environment.env, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`create-account exited ${String(code)}`)
  return JSON.parse(out) as { api_key: string }
}

/** The object key a path-style storage_url names. */
function keyOf(storageUrl: string): string {
  return decodeURIComponent(new URL(storageUrl).pathname.split('/').slice(2).join('/'))
}

t.test('storage_url inputs with private networks refused', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { ALLOW_PRIVATE_NETWORKS: '0' })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const api = new Client(service)
  const otherKey = (await createAccount(environment)).api_key
  const other = new Client({ baseUrl: service.baseUrl, apiKey: otherKey })
  const s3 = environment.s3.client()
  t.teardown(() => s3.destroy())

  const upload = async (client: Client, apiKey: string): Promise<{ file_id: string; storage_url: string }> => {
    const form = new FormData()
    form.append('file', new Blob([await readFile(clip)], { type: 'video/mp4' }), 'clip.mp4')
    const response = await fetch(`${service.baseUrl}/api/v1/files/upload`, { method: 'POST', headers: { 'x-api-key': apiKey }, body: form })
    if (response.status !== 200) throw new Error(`upload answered ${response.status}`)
    const file = await client.waitForFile(((await response.json()) as { file_id: string }).file_id)
    if (file.status !== 'STORED') throw new Error(`upload ended ${JSON.stringify(file)}`)
    return file
  }
  const mine = await upload(api, service.apiKey)
  const scale = { output_files: { out_small: 'small.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=160:-2 {{out_small}}' }

  t.test('the guard is on: a loopback URL that is not a storage_url fails as a forbidden address', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', { input_files: { in_video: `${environment.s3.endpoint}/elsewhere/clip.mp4` }, ...scale })
    t.match(await api.waitForCommand(command_id), { status: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS', error_message: /in_video.*loopback/ })
  })

  t.test('run-ffmpeg-command reads an upload by its storage_url', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', { input_files: { in_video: mine.storage_url }, ...scale })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_small, { width: 160, height: 120 })
    t.match(await downloadAndProbe(done.output_files.out_small.storage_url, dir, 'small.mp4'), { width: 160 })

    t.test('and a command output’s storage_url is an input in turn', async (t) => {
      const { command_id } = await api.post('/run-ffmpeg-command', {
        input_files: { in_video: done.output_files.out_small.storage_url },
        output_files: { out_frame: 'frame.jpg' },
        ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_frame}}',
      })
      const next = await api.waitForCommand(command_id)
      t.match(next, { status: 'SUCCESS', output_files: { out_frame: { width: 160, height: 120, mime_type: 'image/jpeg' } } }, JSON.stringify(next))
    })
  })

  t.test('chained and multiple commands read storage_urls', async (t) => {
    const chained = await api.post('/run-chained-ffmpeg-commands', {
      input_files: { in_video: mine.storage_url },
      output_files: { out_gif: 'preview.gif' },
      ffmpeg_commands: ['ffmpeg -i {{in_video}} -vf fps=5,scale=80:-1 step.mp4', 'ffmpeg -i step.mp4 {{out_gif}}'],
    })
    const multiple = await api.post('/run-multiple-ffmpeg-commands', {
      commands: [
        { input_files: { in_a: mine.storage_url }, output_files: { out_a: 'a.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_a}} -frames:v 1 {{out_a}}' },
        { input_files: { in_b: mine.storage_url }, output_files: { out_b: 'b.mkv' }, ffmpeg_command: 'ffmpeg -i {{in_b}} -c copy {{out_b}}' },
      ],
    })
    const [gif, a, b] = await Promise.all([chained.command_id, ...multiple.command_ids].map((id: string) => api.waitForCommand(id)))
    t.match(gif, { status: 'SUCCESS', output_files: { out_gif: { width: 80, codec: 'gif' } } }, JSON.stringify(gif))
    t.match(a, { status: 'SUCCESS', output_files: { out_a: { width: 320 } } }, JSON.stringify(a))
    t.match(b, { status: 'SUCCESS', output_files: { out_b: { codec: 'h264', width: 320 } } }, JSON.stringify(b))
  })

  t.test('a preset executes with a storage_url input', async (t) => {
    const created = await api.request('POST', '/presets', { name: 'Small', input_file_keys: ['in_video'], output_file_definitions: scale.output_files, ffmpeg_command: scale.ffmpeg_command })
    t.equal(created.status, 201, JSON.stringify(created.body))
    const { command_id } = await api.post(`/presets/${created.body.preset_id}/execute`, { input_files: { in_video: mine.storage_url } })
    t.match(await api.waitForCommand(command_id), { status: 'SUCCESS', output_files: { out_small: { width: 160 } } })
  })

  t.test('store-file copies a storage_url into a new file', async (t) => {
    const { file_id } = await api.post('/files/store-file', { file_url: mine.storage_url })
    const stored = await api.waitForFile(file_id)
    t.match(stored, { status: 'STORED', service_store_type: 'STORED_FILE', width: 320, height: 240, original_file_url: mine.storage_url }, JSON.stringify(stored))
    t.not(keyOf(stored.storage_url), keyOf(mine.storage_url), 'the copy is an object of its own')
  })

  t.test('hostile look-alikes of a storage_url are refused at submission (422) and never fetched', async (t) => {
    const url = new URL(mine.storage_url)
    const signature = url.searchParams.get('X-Amz-Signature') as string
    const variant = (edit: (u: URL) => void) => {
      const copy = new URL(url)
      edit(copy)
      return copy.toString()
    }
    const expired = await getSignedUrl(s3, new GetObjectCommand({ Bucket: environment.s3.bucket, Key: keyOf(mine.storage_url) }), {
      expiresIn: 60,
      signingDate: new Date(Date.now() - 3600_000),
    })
    const theirs = await upload(other, otherKey)
    const deleted = await upload(api, service.apiKey)
    t.equal((await api.request('DELETE', `/files/${deleted.file_id}`)).status, 200)
    const cases: Array<[string, string, RegExp]> = [
      ['a tampered signature', variant((u) => u.searchParams.set('X-Amz-Signature', `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`)), /signature does not verify/],
      ['an added parameter', variant((u) => u.searchParams.append('response-content-type', 'text/html')), /signature does not verify/],
      ['another key with the same signature', variant((u) => (u.pathname = u.pathname.replace(/[^/]+$/, 'other.mp4'))), /signature does not verify/],
      ['a dot-dot key', variant((u) => (u.pathname = `${u.pathname.replace(/[^/]+$/, '')}..%2F..%2Fclip.mp4`)), /"\.\." segment/],
      ['an expired URL signed with the service’s own credentials', expired, /expired at/],
      ['another account’s file', theirs.storage_url, /no file of this account/],
      ['a deleted file', deleted.storage_url, /was deleted/],
      ['no signature at all', `${url.origin}${url.pathname}`, /without a complete signature/],
    ]
    for (const [what, input, reason] of cases) {
      const answer = await api.request('POST', '/run-ffmpeg-command', { input_files: { in_video: input }, ...scale })
      t.equal(answer.status, 422, `${what}: ${JSON.stringify(answer.body)}`)
      t.match(answer.body, { error: 'VALIDATION_ERROR', message: /^input_files\.in_video: / }, what)
      t.match(answer.body.message, reason, what)
    }
    const stored = await api.request('POST', '/files/store-file', { file_url: cases[0]![1] })
    t.match(stored, { status: 422, body: { message: /^file_url: .*signature does not verify/ } }, 'store-file refuses a tampered storage_url')
    const chained = await api.request('POST', '/run-chained-ffmpeg-commands', { input_files: { in_video: expired }, output_files: { out_a: 'a.mp4' }, ffmpeg_commands: ['ffmpeg -i {{in_video}} {{out_a}}'] })
    t.match(chained, { status: 422, body: { message: /^input_files\.in_video: .*expired/ } }, 'chains check their inputs too')
    const multiple = await api.request('POST', '/run-multiple-ffmpeg-commands', { commands: [{ input_files: { in_a: mine.storage_url }, output_files: { out_a: 'a.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_a}} -frames:v 1 {{out_a}}' }, { input_files: { in_b: theirs.storage_url }, output_files: { out_b: 'b.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_b}} -frames:v 1 {{out_b}}' }] })
    t.match(multiple, { status: 422, body: { message: /^commands\[1\]\.input_files\.in_b: / } }, 'a multiple request names the command at fault')
    const ytdlp = await api.request('POST', '/ytdlp-download', { input_urls: { in_video: mine.storage_url } })
    t.match(ytdlp, { status: 422, body: { message: /^input_urls\.in_video: .*FFmpeg commands/ } }, 'yt-dlp does not take storage_urls')
  })

  t.test('URLs that only look like the managed bucket stay under the URL guard', async (t) => {
    // Signed with the same credentials, for a bucket on the same endpoint that is not the managed one.
    const bucket = await environment.s3.createBucket()
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'clip.mp4', Body: await readFile(clip) }))
    const otherBucket = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'clip.mp4' }), { expiresIn: 600 })
    const otherHost = mine.storage_url.replace('//127.0.0.1:', '//localhost:')
    for (const [what, input] of [['another bucket on the same endpoint', otherBucket], ['the managed bucket under another host name', otherHost]] as const) {
      const { command_id } = await api.post('/run-ffmpeg-command', { input_files: { in_video: input }, ...scale })
      t.match(await api.waitForCommand(command_id), { status: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS' }, what)
    }
  })
})
