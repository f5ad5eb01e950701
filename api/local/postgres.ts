import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { access, chmod, chown, constants, mkdir, readFile, realpath, stat, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { ChildServer } from './child-server.js'
import { freePort } from './ports.js'
import { toolCacheDir } from './tools.js'

const run = promisify(execFile)

/**
 * A throwaway PostgreSQL server on a loopback port, for FerretDB's postgresql
 * backend (opt-in: `scripts/provision.sh start --postgresql` links its binaries).
 */
export interface LocalPostgres {
  /** Connection string for the `postgres` database, with user and password. */
  url: string
  server: ChildServer
  /** Fast shutdown (SIGINT: disconnects clients, checkpoints), SIGKILL after 5 s. */
  stop(): Promise<void>
}

export interface PostgresOptions {
  /**
   * Trade durability for speed, for tests and benchmarks: fsync, full-page
   * writes and synchronous commit off. A crash of the host can lose or corrupt
   * the data.
   */
  fast?: boolean
}

/** Where scripts/provision.sh --postgresql links `postgres` and `initdb`. */
export function postgresBinary(name: 'postgres' | 'initdb', env: NodeJS.ProcessEnv = process.env): string {
  return join(toolCacheDir(env), 'bin', name)
}

const USER = 'postgres'

/**
 * PostgreSQL refuses to run as root. As root, initdb and postgres run as the
 * `postgres` account (created by Debian's package) through setpriv, which execs
 * rather than forks, so signals reach the server itself.
 */
async function runAs(): Promise<{ wrap: (command: string, args: string[]) => [string, string[]]; uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const [uid, gid] = await Promise.all([run('id', ['-u', USER]), run('id', ['-g', USER])]).catch(() => {
    throw new Error(`PostgreSQL cannot run as root and there is no "${USER}" account to run it as (apt-get install postgresql creates it)`)
  })
  return {
    wrap: (command, args) => ['setpriv', [`--reuid=${USER}`, `--regid=${USER}`, '--init-groups', '--', command, ...args]],
    uid: Number(uid.stdout.trim()),
    gid: Number(gid.stdout.trim()),
  }
}

/** Fails clearly when the `postgres` account could not reach `dir` (a 0700 folder on the way). */
async function checkTraversable(dir: string): Promise<void> {
  for (let d = dirname(resolve(dir)); ; d = dirname(d)) {
    const { mode } = await stat(d)
    if ((mode & 0o001) === 0) {
      throw new Error(`PostgreSQL runs as "${USER}" and cannot reach ${dir}: ${d} is not searchable by others (chmod o+x it, or use another folder)`)
    }
    if (d === dirname(d)) return
  }
}

/**
 * Starts PostgreSQL with its cluster under `dataDir` (created by initdb the
 * first time; reused afterwards), listening on 127.0.0.1 only, on a free port,
 * with no Unix socket. The superuser `postgres` has a random password kept in
 * `dataDir/password` (0600).
 */
export async function startPostgres(dataDir: string, options: PostgresOptions = {}): Promise<LocalPostgres> {
  // The links' targets: initdb finds postgres next to itself, and the postgres
  // account could not follow a link inside root's home anyway.
  const resolveBinary = async (name: 'postgres' | 'initdb') => {
    const bin = postgresBinary(name)
    await access(bin, constants.X_OK).catch(() => {
      throw new Error(`${bin} is missing: run scripts/provision.sh start --postgresql (installs Debian's postgresql)`)
    })
    return realpath(bin)
  }
  const postgres = await resolveBinary('postgres')
  const initdb = await resolveBinary('initdb')
  const as = await runAs()
  const cluster = join(dataDir, 'pgdata')
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  const passwordFile = join(dataDir, 'password')
  if (as) {
    await checkTraversable(dataDir)
    await chown(dataDir, as.uid, as.gid)
  }
  const initialised = await access(join(cluster, 'PG_VERSION')).then(
    () => true,
    () => false,
  )
  if (!initialised) {
    await writeFile(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 })
    if (as) await chown(passwordFile, as.uid, as.gid)
    const args = ['-D', cluster, '-U', USER, '--pwfile', passwordFile, '--auth', 'scram-sha-256', '-E', 'UTF8', '--locale', 'C', '--no-instructions']
    if (options.fast) args.push('--no-sync')
    const [command, rest] = as ? as.wrap(initdb, args) : [initdb, args]
    await run(command, rest).catch((err: Error & { stderr?: string }) => {
      throw new Error(`initdb failed: ${err.stderr ?? err.message}`)
    })
  }
  const password = (await readFile(passwordFile, 'utf8')).trim()
  await chmod(dataDir, 0o700)

  const settings = ['listen_addresses=127.0.0.1', 'unix_socket_directories=', 'max_connections=200', 'shared_buffers=128MB']
  if (options.fast) settings.push('fsync=off', 'full_page_writes=off', 'synchronous_commit=off')
  // postgres cannot listen on port 0: take a port that was free a moment ago, retry if it was taken.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const serverArgs = ['-D', cluster, '-p', String(port), ...settings.flatMap((s) => ['-c', s])]
    const [command, args] = as ? as.wrap(postgres, serverArgs) : [postgres, serverArgs]
    const server = ChildServer.start({ name: 'postgres', command, args })
    try {
      await server.waitUntilReady(async () => (server.outputTail().includes('ready to accept connections') ? true : undefined))
    } catch (err) {
      if (attempt < 3 && /could not bind|already in use/i.test(server.outputTail())) continue
      throw err
    }
    const stop = async () => {
      server.kill('SIGINT')
      await server.stop()
    }
    return { url: `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`, server, stop }
  }
}
