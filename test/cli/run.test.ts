import { execFile } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'
import { eventually } from '../harness/eventually.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { buildZip } from '../harness/zip-writer.js'
import { cliEnvironment, runCli, runCliInTerminal } from './cli-process.js'

const run = promisify(execFile)

/** What ffprobe reads from a file: the first video stream's codec and size. */
async function probe(path: string): Promise<{ codec: string; width: number; height: number }> {
  const { stdout } = await run(toolPath('ffprobe'), ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=codec_name,width,height', '-of', 'json', path])
  const stream = (JSON.parse(stdout) as { streams: { codec_name: string; width: number; height: number }[] }).streams[0]!
  return { codec: stream.codec_name, width: stream.width, height: stream.height }
}

const SCALE = 'ffmpeg -i {{in_video}} -vf scale=320:-2 -c:v libx264 -preset ultrafast -c:a copy {{out_small}}'

t.test('ffkube run against the service as npm start runs it', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 640, height: 360 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const workspace = async (name: string) => {
    const cwd = join(dir, name)
    return cliEnvironment(cwd, { FFKUBE_URL: service.baseUrl, FFKUBE_API_KEY: service.apiKey })
  }

  t.test('in a terminal: a progress bar and the stage until SUCCESS, then the output downloaded into the current directory', async (t) => {
    const user = await workspace('tty')
    const { code, output } = await runCliInTerminal(user, ['run', '--in', `in_video=${media.url(clip)}`, '--out', 'out_small=small.mp4', SCALE])
    t.equal(code, 0, output)
    const commandId = /command ([0-9a-f-]{36})/.exec(output)?.[1]
    t.ok(commandId, 'names the command')
    t.match(output, /[\u2588\u2591]{30} \d+% \| QUEUED/, 'the bar starts at QUEUED')
    t.match(output, /\u2588{30} 100% \| SUCCESS/, 'the bar ends full, at SUCCESS')
    t.match(output, /out_small {2}\S+small\.mp4 {2}320x180 h264/, 'says where the output went')
    t.same(await probe(join(user.cwd, 'small.mp4')), { codec: 'h264', width: 320, height: 180 })
    t.match((await api.request('GET', `/commands/${commandId}`)).body, { status: 'SUCCESS' })
  })

  t.test('outside a terminal: a local input is uploaded first, one line per stage, the path on stdout', async (t) => {
    const user = await workspace('pipe')
    await makeClip(join(user.cwd, 'local.mp4'), { seconds: 1, width: 320, height: 240 })
    const result = await runCli(user, ['run', '--in', 'in_video=local.mp4', '--out', 'out_small=small.mp4', '--metadata', 'job=cli', SCALE])
    t.equal(result.code, 0, result.stderr)
    t.match(result.stderr, /uploading local\.mp4 for in_video/)
    t.match(result.stderr, /^[0-9a-f-]{36} QUEUED$/m)
    t.match(result.stderr, /^[0-9a-f-]{36} SUCCESS 100%$/m)
    t.notMatch(result.stderr, /\u2588/, 'no bar')
    t.match(result.stdout, new RegExp(`^out_small  ${join(user.cwd, 'small.mp4').replace(/[.]/g, '\\.')}  320x240 h264`, 'm'))
    t.same(await probe(join(user.cwd, 'small.mp4')), { codec: 'h264', width: 320, height: 240 })
  })

  t.test('--folder uploads a local zip and sends it as input_compressed_folder; no --in needed', async (t) => {
    const user = await workspace('folder')
    const clipPath = await makeClip(join(user.cwd, 'part.mp4'), { seconds: 1, width: 320, height: 240 })
    await writeFile(join(user.cwd, 'parts.zip'), buildZip([{ name: 'clips/a.mp4', data: await readFile(clipPath) }, { name: 'list.txt', data: "file 'clips/a.mp4'\nfile 'clips/a.mp4'\n" }]))
    const result = await runCli(user, ['run', '--folder', 'parts.zip', '--out', 'out_joined=joined.mp4', 'ffmpeg -f concat -i list.txt -c copy {{out_joined}}'])
    t.equal(result.code, 0, result.stderr)
    t.match(result.stderr, /uploading parts\.zip for the folder/)
    t.same(await probe(join(user.cwd, 'joined.mp4')), { codec: 'h264', width: 320, height: 240 })
    const commandId = /^([0-9a-f-]{36}) SUCCESS/m.exec(result.stderr)?.[1]
    const record = (await api.request('GET', `/commands/${commandId}`)).body
    t.match(record.original_request, { input_files: {}, input_compressed_folder: /^http/ })
  })

  t.test('--no-download writes nothing and prints where the outputs are', async (t) => {
    const user = await workspace('no-download')
    const result = await runCli(user, ['run', '--no-download', '--in', `in_video=${media.url(clip)}`, '--out', 'out_small=small.mp4', SCALE])
    t.equal(result.code, 0, result.stderr)
    t.match(result.stdout, /^status\s+SUCCESS$/m)
    t.match(result.stdout, /^out_small\s+small\.mp4\s+STORED\s+320x180 h264/m)
    t.match(result.stdout, /^\s+http:\/\/\S+small\.mp4\S*$/m, 'the download URL')
    t.same((await readdir(user.cwd)).filter((name) => !name.startsWith('.')), [])
  })

  t.test('--retention-days keeps the outputs that many days; more than the plan keeps exits 3 naming the field', async (t) => {
    const user = await workspace('retention')
    const result = await runCli(user, ['run', '--no-download', '--json', '--retention-days', '3', '--in', `in_video=${media.url(clip)}`, '--out', 'out_small=small.mp4', SCALE])
    t.equal(result.code, 0, result.stderr)
    const fileId = JSON.parse(result.stdout).output_files.out_small.file_id
    const file = (await api.request('GET', `/files/${fileId}`)).body
    t.equal(Date.parse(file.expires_at) - Date.parse(file.created_at), 3 * 86_400_000, 'expires three days after it was stored')
    const refused = await runCli(user, ['run', '--retention-days', '91', '--in', `in_video=${media.url(clip)}`, '--out', 'out_small=small.mp4', SCALE])
    t.equal(refused.code, 3)
    t.match(refused.stderr, /^ffkube: the API refused the request \(400 INVALID_REQUEST: retention_days: at most 90 on the business plan/m)
    const malformed = await runCli(user, ['run', '--retention-days', '0', '--in', `in_video=${media.url(clip)}`, '--out', 'out_small=small.mp4', SCALE])
    t.equal(malformed.code, 2, 'a usage error, before anything is sent')
    t.match(malformed.stderr, /--retention-days takes a whole number from 1 to 3650, got "0"/)
  })

  t.test('an existing file is not replaced: refused before submitting, unless --force', async (t) => {
    const user = await workspace('exists')
    await writeFile(join(user.cwd, 'small.mp4'), 'mine')
    const before = (await api.request('GET', '/commands?limit=100')).body.commands.length
    const refused = await runCli(user, ['run', '--in', `in_video=${media.url(clip)}`, '--out', 'out_small=small.mp4', SCALE])
    t.equal(refused.code, 2)
    t.match(refused.stderr, /small\.mp4 exists; pass --force/)
    t.equal((await api.request('GET', '/commands?limit=100')).body.commands.length, before, 'nothing was submitted')
    const forced = await runCli(user, ['run', '--force', '--in', `in_video=${media.url(clip)}`, '--out', 'out_small=small.mp4', SCALE])
    t.equal(forced.code, 0, forced.stderr)
    t.same(await probe(join(user.cwd, 'small.mp4')), { codec: 'h264', width: 320, height: 180 })
  })

  t.test('a command that ends FAILED exits 1 with its error and the tail of its log', async (t) => {
    const user = await workspace('failed')
    const result = await runCli(user, ['run', '--in', `in_video=${media.url(clip)}`, '--out', 'out_x=x.mp4', 'ffmpeg -i {{in_video}} -map 0:7 {{out_x}}'])
    t.equal(result.code, 1, result.stderr)
    // FFmpeg 8.1 words it "Failed to set value '0:7' for option 'map'" (5.1: "Stream map '0:7' matches no streams").
    t.match(result.stderr, /^ffkube: command [0-9a-f-]{36} FAILED: FFMPEG_FAILED: .*'0:7' for option 'map'/m)
    // The log travels on its own path (NATS, the log projector) and may trail the FAILED status.
    t.match(result.stderr, /^(last 20 lines of the log|the log is empty so far)/m)
    const commandId = /command ([0-9a-f-]{36}) FAILED/.exec(result.stderr)![1]!
    await eventually('the log to hold the error line', async () => /for option 'map'/.test((await api.request('GET', `/commands/${commandId}/logs`)).body.log))
    const again = await runCli(user, ['wait', commandId])
    t.equal(again.code, 1)
    t.match(again.stderr, /last 20 lines of the log.*\n(.*\n)*Failed to set value '0:7' for option 'map'/, "ffmpeg's own complaint, in the log's tail")
  })

  t.test("a refused key exits 3 with the API's 401 message", async (t) => {
    const user = await workspace('bad-key')
    const result = await runCli(user, ['list'], { env: { FFKUBE_API_KEY: `ffsk_${'0'.repeat(64)}` } })
    t.equal(result.code, 3)
    t.match(result.stderr, /^ffkube: the API refused the key \(401 UNAUTHORIZED: .+\); set FFKUBE_API_KEY/m)
  })

  t.test("a request the API refuses exits 3 with its error code and the message naming the field", async (t) => {
    const user = await workspace('refused')
    const result = await runCli(user, ['run', '--in', `video=${media.url(clip)}`, '--out', 'out_x=x.mp4', 'ffmpeg -i {{video}} {{out_x}}'])
    t.equal(result.code, 3)
    t.match(result.stderr, /^ffkube: the API refused the request \((400 INVALID_REQUEST|422 VALIDATION_ERROR): .*input_files/m)
  })
})
