import { mkdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { ChildServer } from './child-server.js'
import { toolPath } from './tools.js'

/** A FerretDB (MongoDB wire protocol over SQLite) listening on a loopback port (or the address asked for). */
export interface LocalMongo {
  url: string
  server: ChildServer
}

/** Where local mode keeps the embedded store's files under its data dir. */
export function localMongoDir(dataDir: string): string {
  return join(dataDir, 'ferretdb')
}

/** The URL of the embedded store a running `npm start` wrote into `dir`; '' when there is none. */
export async function runningLocalMongoUrl(dir: string): Promise<string> {
  return readFile(join(dir, 'ferretdb.uri'), 'utf8').then(
    (text) => text.trim(),
    () => '',
  )
}

/**
 * Starts local mode's MongoDB-wire server: FerretDB, the one that builds here
 * as a single binary with no other database behind it, with ffkube's patches
 * (docs/adr/0001-patched-ferretdb.md), on a free loopback port, keeping its
 * URI file and SQLite databases under `dataDir`. `binary` runs another build
 * of the same wrapper instead (bench/store.ts's stock one); `host` is the
 * address to listen on (the cluster lane's pods reach a node IP, not loopback),
 * `port` a fixed one (0: any free port), as a restart on the same data keeps its clients' URL.
 */
export async function startLocalMongo(dataDir: string, binary: string = toolPath('ferretdb'), host = '127.0.0.1', port = 0): Promise<LocalMongo> {
  await mkdir(dataDir, { recursive: true })
  const uriFile = join(dataDir, 'ferretdb.uri')
  await rm(uriFile, { force: true })
  const server = ChildServer.start({
    name: 'ferretdb',
    command: binary,
    args: ['-listen', `${host}:${port}`, '-data', join(dataDir, 'sqlite'), '-uri-file', uriFile],
  })
  const url = await server.waitUntilReady(async () => (await readFile(uriFile, 'utf8')).trim() || undefined)
  return { url, server }
}
