/**
 * The curl examples of docs/api/ run against the service as `npm start` runs
 * it: each one, as written, with BASE, KEY, ID (a finished command) and
 * PRESET_ID set as the page tells the reader, must reach a route that accepts
 * it — no 4xx for a wrong path, method, field or body, no 5xx. Examples with a
 * `…` placeholder (a URL or body left for the reader) are not runnable and are
 * counted apart.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'
import { CHECKOUT } from '../harness/checkout.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { codeBlocks } from './markdown.js'

const API_DOCS = join(CHECKOUT, 'docs', 'api')

/**
 * The commands of a shell block: a line ending in `\` or `|`, or one that
 * leaves a single quote open, continues on the next; comment lines are dropped.
 */
function shellCommands(block: string): string[] {
  const commands: string[] = []
  let current = ''
  for (const line of block.split('\n')) {
    const open = (current.match(/'/g)?.length ?? 0) % 2 === 1
    if (!open && current === '' && (line.trim() === '' || line.trim().startsWith('#'))) continue
    current += (current ? '\n' : '') + line
    const stillOpen = (current.match(/'/g)?.length ?? 0) % 2 === 1
    if (!stillOpen && !/[\\|]\s*$/.test(line)) {
      commands.push(current)
      current = ''
    }
  }
  if (current) commands.push(current)
  return commands
}

/** `command` without its trailing comments (a ` # ` outside quotes), which may hold a `…` of an example answer. */
function withoutComments(command: string): string {
  return command
    .split('\n')
    .map((line) => {
      for (const m of line.matchAll(/\s#\s/g)) {
        const before = line.slice(0, m.index)
        if ((before.match(/'/g)?.length ?? 0) % 2 === 0 && (before.match(/"/g)?.length ?? 0) % 2 === 0) return before
      }
      return line
    })
    .join('\n')
}

/** Statuses an example may get: success, or the conflict a finished command's cancel documents. */
function acceptable(status: number): boolean {
  return (status >= 200 && status < 300) || status === 409
}

t.test('splits shell blocks into commands across continuations, pipes and quoted bodies', async (t) => {
  t.same(shellCommands("# a comment\ncurl -s a \\\n  -H x\ncurl -d '{\n  \"a\": 1}'\necho x |\n  jq .\n"), [
    'curl -s a \\\n  -H x',
    "curl -d '{\n  \"a\": 1}'",
    'echo x |\n  jq .',
  ])
  t.equal(withoutComments('curl "$BASE/a#b" -d \'{"x": "# y"}\'   # {"id":"…"}'), 'curl "$BASE/a#b" -d \'{"x": "# y"}\'  ')
})

t.test('every runnable curl example of docs/api reaches a route that accepts it', async (t) => {
  const pages = (await readdir(API_DOCS)).filter((name) => name.endsWith('.md')).sort()
  const examples: Array<{ page: string; command: string }> = []
  let placeholders = 0
  for (const page of pages) {
    for (const block of codeBlocks(await readFile(join(API_DOCS, page), 'utf8')).filter((b) => b.lang === 'sh')) {
      for (const command of shellCommands(block.text).filter((c) => /^curl\s/.test(c))) {
        if (withoutComments(command).includes('…')) placeholders++
        else examples.push({ page, command })
      }
    }
  }
  t.ok(examples.length >= 15, `${examples.length} runnable examples (${placeholders} with a placeholder left for the reader)`)

  const work = await scratchDir(t, 'ffkube-api-examples-')
  const home = await scratchDir(t, 'ffkube-api-examples-home-')
  // Every transfer prints its status on stderr, so stdout stays what the example pipes on.
  await writeFile(join(home, '.curlrc'), 'max-time = 30\nwrite-out = "%{stderr}HTTP %{http_code}\\n"\n')
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(work, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const { command_id: id } = await api.post('/run-ffmpeg-command', {
    input_files: { in_video: media.url(clip) }, output_files: { out_small: 'small.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_small}}',
  })
  const done = await api.waitForCommand(id)
  t.equal(done.status, 'SUCCESS', 'the command the examples call $ID finished')
  const presets = await api.request('GET', '/presets')
  const presetId = presets.body.presets[0].preset_id as string

  const env = { PATH: process.env.PATH, HOME: home, BASE: `${service.baseUrl}/api/v1`, KEY: service.apiKey, ID: id, PRESET_ID: presetId }
  for (const { page, command } of examples) {
    const run = spawn('bash', ['-o', 'pipefail', '-c', command], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    let stdout = ''
    run.stdout.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString()).slice(-2_000)))
    run.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => run.once('exit', resolve))
    const statuses = [...stderr.matchAll(/^HTTP (\d{3})$/gm)].map((m) => Number(m[1]))
    const first = command.split('\n')[0]!
    t.ok(statuses.length > 0 && statuses.every(acceptable), `${page}: ${first} → HTTP ${statuses.join(', ')}`, { command, stdout, stderr })
    // An event stream may run into max-time (28); anything else must exit 0.
    t.ok(code === 0 || (code === 28 && command.includes('curl -N')), `${page}: ${first} exits ${code}`, { command, stderr })
  }
})
