import t, { type Test } from 'tap'
import { processesMentioning } from '../harness/processes.js'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, cp, mkdir, readdir, readFile, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { connect } from 'nats'
import { StorageQuota } from '../../api/files/storage-quota.js'
import { startApi } from '../harness/api.js'
import { eventually } from '../harness/eventually.js'
import { startNats } from '../harness/nats.js'
import { startMongo } from '../harness/mongo.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the built CLI (`npm test` compiles before tap) with `env` replacing the variables it reads. */
function admin(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return run(process.execPath, ['dist/api/admin/cli.js', ...args], env)
}

function run(program: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ['MONGODB_URL', 'MONGODB_DATABASE', 'ENCRYPTION_KEYS', 'FFKUBE_DATA_DIR']) delete base[name]
  const child = spawn(program, args, { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })))
}

t.test('admin CLI against MONGODB_URL', async (t) => {
  const nats = await startNats(t)
  const natsConnection = await connect({ servers: nats.url })
  t.teardown(() => natsConnection.close())
  // A clock that never moves: the API's cached keys never expire, so a change the CLI makes can reach it only over NATS.
  const frozen = new Date()
  const api = await startApi(t, { nats: natsConnection, clock: () => frozen })
  const env = {
    MONGODB_URL: api.mongo.url,
    MONGODB_DATABASE: api.mongo.dbName,
    NATS_URL: nats.url,
    ENCRYPTION_KEYS: `cli:${randomBytes(32).toString('base64')}`,
  }
  const destinations = (key: string) =>
    api.app.inject({ method: 'GET', url: '/api/v1/storage-destinations', headers: { 'x-api-key': key } })
  /** The API answers `status` for `key` (it heard the CLI's change), and keeps answering it. */
  const answers = async (t: Test, key: string, status: number, what: string) => {
    await eventually(what, async () => (await destinations(key)).statusCode === status)
    for (let i = 0; i < 5; i++) t.equal((await destinations(key)).statusCode, status, `${what}: request ${i + 1} after`)
  }

  let account = ''
  let firstKey = ''
  let firstKeyId = ''

  t.test('create-account prints exactly one JSON line with the account id and a working key', async (t) => {
    const res = await admin(['create-account', '--plan', 'business', '--name', 'Acme'], env)
    t.equal(res.code, 0, res.stderr)
    t.equal(res.stdout.split('\n').filter(Boolean).length, 1)
    const out = JSON.parse(res.stdout)
    t.match(out, { account_id: /^acc_[0-9a-f]{32}$/, api_key: /^ffsk_[0-9a-f]{64}$/, key_id: /^key_[0-9a-f]{32}$/ })
    account = out.account_id
    firstKey = out.api_key
    firstKeyId = out.key_id
    t.equal((await destinations(firstKey)).statusCode, 200, 'the key works on a Business-only route')
    const stored = await api.db.collection('accounts').findOne({ _id: account as never })
    t.equal(stored?.name, 'Acme')
  })

  t.test('set-plan changes what the account may do on a running API, which hears of it over NATS', async (t) => {
    const res = await admin(['set-plan', '--account', account, '--plan', 'growth'], env)
    t.equal(res.code, 0, res.stderr)
    t.same(JSON.parse(res.stdout), { account_id: account, plan: 'growth' })
    await answers(t, firstKey, 403, 'the Business-only route refused on Growth')
    await admin(['set-plan', '--account', account, '--plan', 'business'], env)
    await answers(t, firstKey, 200, 'the Business-only route open again')
  })

  t.test('create-key adds a second working key; revoke-key revokes only the one named', async (t) => {
    const created = await admin(['create-key', '--account', account], env)
    t.equal(created.code, 0, created.stderr)
    const second = JSON.parse(created.stdout)
    t.equal(second.account_id, account)
    t.not(second.api_key, firstKey)
    t.equal((await destinations(second.api_key)).statusCode, 200)

    const revoked = await admin(['revoke-key', '--key', firstKeyId], env)
    t.equal(revoked.code, 0, revoked.stderr)
    t.same(JSON.parse(revoked.stdout), { key_id: firstKeyId, revoked: true })
    await answers(t, firstKey, 401, 'the revoked key refused')
    t.equal((await destinations(firstKey)).json().error, 'UNAUTHORIZED')
    t.equal((await destinations(second.api_key)).statusCode, 200, 'the other key still works')

    const again = await admin(['revoke-key', '--key', firstKeyId], env)
    t.equal(again.code, 1)
    t.equal(again.stdout, '')
    t.match(again.stderr, /no active API key key_/)

    const byValue = await admin(['revoke-key', '--key', second.api_key], env)
    t.equal(byValue.code, 0, byValue.stderr)
    t.equal(JSON.parse(byValue.stdout).key_id, second.key_id, 'a key can also be revoked by its value')
    await answers(t, second.api_key, 401, 'the key revoked by its value refused')
  })

  t.test('recount-storage frees what a crash left counted and prints what it freed', async (t) => {
    // As a crash leaves them: an upload counted whose record was never written, a file deleted but still counted.
    const quota = new StorageQuota(api.db, { free: 0, trial: 0, growth: 0, business: 0 }, async () => 'business')
    await quota.reserve(account, [{ id: 'file_kept', bytes: 1000 }, { id: 'file_deleted', bytes: 2000 }, { id: 'file_never_recorded', bytes: 4000 }])
    await api.db.collection('files').insertMany([
      { _id: 'file_kept', account_id: account, status: 'STORED', is_deleted: false },
      { _id: 'file_deleted', account_id: account, status: 'STORED', is_deleted: true },
    ] as never[])
    const res = await admin(['recount-storage', '--account', account, '--settle-seconds', '0'], env)
    t.equal(res.code, 0, res.stderr)
    t.same(JSON.parse(res.stdout), { account_id: account, stored_bytes_before: 7000, stored_bytes: 1000, released: { file_deleted: 2000, file_never_recorded: 4000 } })
    t.same(await quota.standing(account), { storedBytes: 1000, quotaBytes: null })
  })

  const failures: Array<[string, string[], number, RegExp]> = [
    ['no command', [], 2, /no command given[\s\S]*usage:[\s\S]*create-account --plan/],
    ['an unknown command', ['delete-everything'], 2, /unknown command "delete-everything"/],
    ['create-account without --plan', ['create-account'], 2, /--plan is required/],
    ['an unknown plan', ['create-account', '--plan', 'gold'], 2, /--plan must be one of free, trial, growth, business, got "gold"/],
    ['an unknown option', ['create-account', '--plan', 'free', '--colour', 'red'], 2, /colour/],
    ['create-key for a missing account', ['create-key', '--account', 'acc_missing'], 1, /no account acc_missing/],
    ['set-plan for a missing account', ['set-plan', '--account', 'acc_missing', '--plan', 'free'], 1, /no account acc_missing/],
    ['revoke-key without --key', ['revoke-key'], 2, /--key is required/],
    ['recount-storage with a wait that is no number', ['recount-storage', '--account', 'acc_missing', '--settle-seconds', 'soon'], 2, /--settle-seconds must be a whole number of seconds, got "soon"/],
    ['recount-storage for a missing account', ['recount-storage', '--account', 'acc_missing'], 1, /no account acc_missing/],
  ]
  for (const [what, args, code, message] of failures) {
    t.test(`exits ${code} with a clear message and nothing on stdout for ${what}`, async (t) => {
      const res = await admin(args, env)
      t.equal(res.code, code)
      t.equal(res.stdout, '')
      t.match(res.stderr, message)
    })
  }
})

t.test('admin CLI in local mode starts FerretDB on the data dir for the command and stops it after', async (t) => {
  const dataDir = await scratchDir(t, 'ffkube-admin-')
  const env = { FFKUBE_DATA_DIR: dataDir }
  const created = await admin(['create-account', '--plan', 'trial'], env)
  t.equal(created.code, 0, created.stderr)
  const { account_id } = JSON.parse(created.stdout)
  t.ok((await stat(join(dataDir, 'encryption-keys'))).isFile(), 'the local encryption key is created as npm start would')
  t.same(await processesMentioning(dataDir), [], 'no FerretDB is left running')

  const changed = await admin(['set-plan', '--account', account_id, '--plan', 'growth'], env)
  t.equal(changed.code, 0, `the account persisted in the data dir: ${changed.stderr}`)
  t.same(await processesMentioning(dataDir), [])
})

/**
 * A copy of the checkout for scripts/admin.sh: the sources tsconfig.json
 * compiles, the built dist/, and a node_modules whose packages are the real
 * ones but whose `tsc` only records that it was called (in `compiler-calls`).
 * Every file is dated `sourcesAt`, the build stamp `builtAt`.
 */
async function checkoutCopy(t: Teardown, sourcesAt: Date, builtAt: Date): Promise<{ root: string; compilerCalls(): Promise<number> }> {
  const root = await scratchDir(t, 'ffkube-admin-build-')
  const { include } = JSON.parse(await readFile('tsconfig.json', 'utf8')) as { include: string[] }
  for (const entry of [...include, 'tsconfig.json', 'package-lock.json', 'dist']) await cp(entry, join(root, entry), { recursive: true })
  for (const entry of await readdir(root, { recursive: true })) await utimes(join(root, entry), sourcesAt, sourcesAt)
  const modules = join(root, 'node_modules')
  await mkdir(join(modules, '.bin'), { recursive: true })
  for (const entry of await readdir('node_modules')) {
    if (entry !== '.bin') await symlink(resolve('node_modules', entry), join(modules, entry))
  }
  const calls = join(root, 'compiler-calls')
  await writeFile(join(modules, '.bin', 'tsc'), `#!/bin/sh\necho "$*" >>'${calls}'\n`)
  await chmod(join(modules, '.bin', 'tsc'), 0o755)
  await writeFile(join(root, 'dist', '.admin-build-stamp'), '')
  await utimes(join(root, 'dist', '.admin-build-stamp'), builtAt, builtAt)
  const compilerCalls = async () => (await readFile(calls, 'utf8').catch(() => '')).split('\n').filter(Boolean).length
  return { root, compilerCalls }
}

t.test('npm run admin builds only when a source is newer than the last build', async (t) => {
  const mongo = await startMongo(t)
  const env = { MONGODB_URL: mongo.url, MONGODB_DATABASE: mongo.dbName, ENCRYPTION_KEYS: `cli:${randomBytes(32).toString('base64')}` }
  const now = Date.now()
  const { root, compilerCalls } = await checkoutCopy(t, new Date(now - 60_000), new Date(now - 30_000))
  const adminScript = (args: string[]) => run('bash', [join(root, 'scripts', 'admin.sh'), ...args], env)

  const current = await adminScript(['create-account', '--plan', 'free'])
  t.equal(current.code, 0, current.stderr)
  t.match(JSON.parse(current.stdout), { account_id: /^acc_/ }, 'the command ran on the existing build')
  t.equal(await compilerCalls(), 0, 'a current build is not compiled again')

  const edited = new Date(now - 10_000)
  await utimes(join(root, 'api', 'admin', 'cli.ts'), edited, edited)
  const stale = await adminScript(['create-account', '--plan', 'free'])
  t.equal(stale.code, 0, stale.stderr)
  t.equal(await compilerCalls(), 1, 'a source edited after the build is compiled')

  const again = await adminScript(['create-account', '--plan', 'free'])
  t.equal(again.code, 0, again.stderr)
  t.equal(await compilerCalls(), 1, 'the build that ran counts as current for the next call')
})
