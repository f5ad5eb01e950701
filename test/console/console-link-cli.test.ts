import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { startApi } from '../harness/api.js'

/** Runs the built admin CLI (`npm test` compiles before tap) against the test's database. */
function admin(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ['MONGODB_URL', 'MONGODB_DATABASE', 'ENCRYPTION_KEYS', 'FFKUBE_DATA_DIR', 'PORT']) delete base[name]
  const child = spawn(process.execPath, ['dist/api/admin/cli.js', ...args], { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })))
}

t.test('admin console-link', async (t) => {
  const api = await startApi(t)
  const account = await api.createAccount('trial')
  const env = { MONGODB_URL: api.mongo.url, MONGODB_DATABASE: api.mongo.dbName, ENCRYPTION_KEYS: `cli:${randomBytes(32).toString('base64')}` }

  t.test('prints a one-time link whose token is in the fragment, and the link signs in once', async (t) => {
    const result = await admin(['console-link', '--account', account.account_id], env)
    t.equal(result.code, 0, result.stderr)
    const printed = JSON.parse(result.stdout)
    t.match(printed, { account_id: account.account_id, url: String, expires_at: String })
    const match = /^http:\/\/127\.0\.0\.1:8080\/console\/#\/sign-in\/link\/([A-Za-z0-9_-]{43})$/.exec(printed.url)
    t.ok(match, `the default base URL is npm start's: ${printed.url}`)
    const token = match![1]!
    const first = await api.app.inject({ method: 'POST', url: '/console/api/session/link', payload: { token } })
    t.equal(first.statusCode, 200, first.body)
    t.equal(first.json().account_id, account.account_id)
    t.equal((await api.app.inject({ method: 'POST', url: '/console/api/session/link', payload: { token } })).statusCode, 401)
  })

  t.test('--base-url sets where the link points', async (t) => {
    const result = await admin(['console-link', '--account', account.account_id, '--base-url', 'https://media.example.com/ffkube/'], env)
    t.equal(result.code, 0, result.stderr)
    t.match(JSON.parse(result.stdout).url, /^https:\/\/media\.example\.com\/ffkube\/console\/#\/sign-in\/link\//)
  })

  t.test('refuses an unknown account (exit 1) and a bad base URL or no account (exit 2)', async (t) => {
    const unknown = await admin(['console-link', '--account', 'acc_nope'], env)
    t.equal(unknown.code, 1)
    t.match(unknown.stderr, /no account acc_nope/)
    const badUrl = await admin(['console-link', '--account', account.account_id, '--base-url', 'ftp://x'], env)
    t.equal(badUrl.code, 2)
    t.match(badUrl.stderr, /--base-url/)
    const missing = await admin(['console-link'], env)
    t.equal(missing.code, 2)
    t.match(missing.stderr, /--account is required/)
  })
})
