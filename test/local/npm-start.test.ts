import t from 'tap'
import { spawn } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { scratchDir } from '../harness/scratch.js'

/** Pids of live processes whose command line mentions `needle`. */
async function processesMentioning(needle: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(needle)) pids.push(Number(entry))
  }
  return pids
}

t.test('local mode starts its own services, answers health checks and leaves nothing behind on SIGINT', async (t) => {
  const dataDir = await scratchDir(t, 'ffkube-start-')
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', FFKUBE_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  for (const name of ['MONGODB_URL', 'NATS_URL', 'S3_ENDPOINT']) delete env[name]
  const child = spawn(process.execPath, ['dist/api/main.js'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.teardown(() => child.kill('SIGKILL'))
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))

  const baseUrl = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve(match[1]!)
    })
    child.once('exit', (code) => reject(new Error(`exited ${code} before listening:\n${stderr}`)))
  })

  const healthz = await fetch(`${baseUrl}/healthz`)
  t.equal(healthz.status, 200)
  const readyz = await fetch(`${baseUrl}/readyz`)
  t.equal(readyz.status, 200)
  t.same(await readyz.json(), { status: 'ready', checks: { mongodb: 'ok', nats: 'ok', storage: 'ok' } })

  const servers = await processesMentioning(dataDir)
  t.equal(servers.length, 3, 'FerretDB, nats-server and MinIO run with their data in the data dir')

  child.kill('SIGINT')
  t.equal(await exited, 0, 'exits cleanly on SIGINT')
  t.same(await processesMentioning(dataDir), [], 'no process it started is left')
})
