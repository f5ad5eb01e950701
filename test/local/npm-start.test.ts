import t from 'tap'
import { processesMentioning } from '../harness/processes.js'
import { spawn } from 'node:child_process'
import { readlink } from 'node:fs/promises'
import { basename } from 'node:path'
import { scratchDir } from '../harness/scratch.js'

t.test('local mode starts its own services, answers health checks and leaves nothing behind on SIGINT', async (t) => {
  const dataDir = await scratchDir(t, 'ffkube-start-')
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', FFKUBE_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  for (const name of ['MONGODB_URL', 'NATS_URL', 'S3_ENDPOINT']) delete env[name]
  const child = spawn(process.execPath, ['dist/api/main.js'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.teardown(() => child.kill('SIGKILL'))
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))

  const { baseUrl, apiKey } = await new Promise<{ baseUrl: string; apiKey: string }>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const listening = /listening on (http:\/\/\S+)/.exec(out)
      const key = /API key \(business plan\): (ffsk_[0-9a-f]{64})\n/.exec(out)
      if (listening && key) resolve({ baseUrl: listening[1]!, apiKey: key[1]! })
    })
    child.once('exit', (code) => reject(new Error(`exited ${code} before listening:\n${stderr}`)))
  })

  const healthz = await fetch(`${baseUrl}/healthz`)
  t.equal(healthz.status, 200)
  const readyz = await fetch(`${baseUrl}/readyz`)
  t.equal(readyz.status, 200)
  t.same(await readyz.json(), { status: 'ready', checks: { mongodb: 'ok', nats: 'ok', storage: 'ok' } })

  // The printed key works, on a Business-only route.
  const destinations = await fetch(`${baseUrl}/api/v1/storage-destinations`, { headers: { 'x-api-key': apiKey } })
  t.equal(destinations.status, 200)
  t.same(await destinations.json(), { storage_destinations: [], limit: 50, offset: 0 })

  // The admin CLI reaches the running server's database: the key it makes works at once.
  const adminEnv: NodeJS.ProcessEnv = { ...env }
  delete adminEnv.PORT
  const created = await new Promise<string>((resolve, reject) => {
    const cli = spawn(process.execPath, ['dist/api/admin/cli.js', 'create-account', '--plan', 'free'], { env: adminEnv, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    cli.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    cli.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`admin CLI exited ${code}`))))
  })
  const freeKey = (JSON.parse(created) as { api_key: string }).api_key
  const forbidden = await fetch(`${baseUrl}/api/v1/storage-destinations`, { headers: { 'x-api-key': freeKey } })
  t.equal(forbidden.status, 403, 'the new free-plan key authenticates against the running server')

  const servers = await processesMentioning(dataDir)
  const programs = await Promise.all(servers.map(async (pid) => basename(await readlink(`/proc/${pid}/exe`))))
  t.same(programs.sort(), ['ferretdb', 'nats-server', 'versitygw'], 'FerretDB, nats-server and versitygw (S3) run with their data in the data dir')

  child.kill('SIGINT')
  t.equal(await exited, 0, 'exits cleanly on SIGINT')
  t.same(await processesMentioning(dataDir), [], 'no process it started is left')

  // A second start prints the same key again.
  const again = spawn(process.execPath, ['dist/api/main.js'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const againExited = new Promise<number | null>((resolve) => again.once('exit', resolve))
  t.teardown(() => again.kill('SIGKILL'))
  const reprinted = await new Promise<string>((resolve, reject) => {
    let out = ''
    again.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const key = /API key \(business plan\): (ffsk_[0-9a-f]{64})\n/.exec(out)
      if (key) resolve(key[1]!)
    })
    again.once('exit', (code) => reject(new Error(`second start exited ${code}`)))
  })
  t.equal(reprinted, apiKey, 'the same key is shown on every start')
  again.kill('SIGINT')
  t.equal(await againExited, 0)
})
