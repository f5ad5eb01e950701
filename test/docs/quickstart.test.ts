/**
 * The README's quickstart, run as a reader runs it: `npm start` in one
 * process, then the README's shell block with the URL and key it printed.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { codeBlocks, section } from './markdown.js'
import { CHECKOUT } from '../harness/checkout.js'
import { eventually } from '../harness/eventually.js'
import { processesMentioning } from '../harness/processes.js'
import { scratchDir } from '../harness/scratch.js'

/** What the README shows: `npm start`, the two lines it prints, and the block to run after it. */
async function quickstart(): Promise<{ start: string; printed: string[]; script: string }> {
  const readme = await readFile(`${CHECKOUT}/README.md`, 'utf8')
  const blocks = codeBlocks(section(readme, 'Quickstart'))
  const [start, printed, script] = blocks
  if (blocks.length !== 3 || start?.lang !== 'sh' || printed?.lang !== 'text' || script?.lang !== 'sh') {
    throw new Error('README "Quickstart" must hold three blocks: sh (npm start), text (what it prints), sh (the calls)')
  }
  return { start: start.text.trim(), printed: printed.text.trim().split('\n'), script: script.text }
}

/** A printed line of the README as a pattern: its URL and key are placeholders for the real ones. */
function linePattern(line: string): RegExp {
  const escaped = line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(escaped.replace('http://127\\.0\\.0\\.1:8080', '(?<url>http://\\S+)').replace('ffsk_…', '(?<key>ffsk_[0-9a-f]+)'))
}

/** The outputs the README promises: a comment holding JSON, alone on its line or after a command. */
function promisedOutputs(script: string): string[] {
  return [...script.matchAll(/(?:^|\s)# (\{.*\})\s*$/gm)].map((m) => m[1]!)
}

t.test('the README quickstart shows npm start, what it prints, and calls that end in SUCCESS', async (t) => {
  const { start, printed, script } = await quickstart()
  t.equal(start, 'npm start')
  t.ok(script.includes('http://127.0.0.1:8080') && script.includes('ffsk_…'), 'the calls use the URL and key npm start prints')
  t.ok(promisedOutputs(script).length >= 2, 'the block says what its calls print')

  const dataDir = await scratchDir(t, 'ffkube-quickstart-')
  const workDir = await scratchDir(t, 'ffkube-quickstart-work-')
  // As on a fresh shell: local mode starts its own servers, on a free port so tests can run side by side.
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', FFKUBE_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  for (const name of ['MONGODB_URL', 'NATS_URL', 'S3_ENDPOINT', 'EXECUTOR', 'ALLOW_PRIVATE_NETWORKS']) delete env[name]
  const [command, ...args] = start.split(' ')
  const service = spawn(command!, args, { cwd: CHECKOUT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let running = true
  const exited = new Promise<void>((resolve) => service.once('exit', () => resolve(void (running = false))))
  const streamsClosed = new Promise<void>((resolve) => service.once('close', () => resolve()))
  t.teardown(() => {
    if (running) process.kill(-service.pid!, 'SIGKILL')
  })
  let output = ''
  let errors = ''
  let sdkVersionWarnings = 0
  service.stderr.on('data', (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-20_000)
    sdkVersionWarnings += chunk.toString().split('NodeVersionSupportWarning').length - 1
  })
  const patterns = printed.map(linePattern)
  const { url, key } = await new Promise<{ url: string; key: string }>((resolve, reject) => {
    service.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const matches = patterns.map((p) => p.exec(output))
      if (matches.every(Boolean)) {
        const groups = Object.assign({}, ...matches.map((m) => m!.groups)) as { url: string; key: string }
        resolve(groups)
      }
    })
    service.once('exit', (code) => reject(new Error(`npm start exited ${code} before printing the README's lines:\n${output}\n${errors}`)))
  })

  const filled = script.replaceAll('http://127.0.0.1:8080', url).replaceAll('ffsk_…', key)
  const run = spawn('bash', ['-euo', 'pipefail', '-c', filled], { cwd: workDir, env: { ...env, PORT: undefined }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  run.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  run.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const code = await new Promise<number | null>((resolve) => run.once('exit', resolve))
  t.equal(code, 0, `the quickstart block exits 0\n${stderr}`)
  const lines = stdout.trim().split('\n')
  t.same(
    lines.map((line) => JSON.stringify(JSON.parse(line))),
    promisedOutputs(script).map((line) => JSON.stringify(JSON.parse(line))),
    'each call prints what the README says it prints',
  )

  // npm start runs the service on the Node the images use, whatever Node ran npm (scripts/lib/node-runtime.sh).
  const pinned = /^FFKUBE_NODE_VERSION=(\S+)$/m.exec(await readFile(`${CHECKOUT}/scripts/lib/node-runtime.sh`, 'utf8'))?.[1]
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, new RegExp(`ffkube_nodejs_version_info\\{version="v${pinned?.replaceAll('.', '\\.')}"`), `the service runs on Node ${pinned}`)

  process.kill(-service.pid!, 'SIGINT')
  await exited
  await streamsClosed
  // Its output streams have closed: everything it printed has been read.
  t.equal(sdkVersionWarnings, 0, 'no NodeVersionSupportWarning from the AWS SDK')
  await eventually('no process npm start started is left', async () => (await processesMentioning(dataDir)).length === 0)
})
