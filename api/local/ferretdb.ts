import { mkdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { ChildServer } from './child-server.js'
import { toolPath } from './tools.js'

/** A FerretDB (MongoDB wire protocol over SQLite) listening on a loopback port. */
export interface LocalMongo {
  url: string
  server: ChildServer
}

/**
 * Starts FerretDB (built with ffkube's patches: docs/adr/0001-patched-ferretdb.md)
 * on a free loopback port, keeping its URI file and SQLite databases under `dataDir`.
 * `binary` runs another build of the same wrapper instead (bench/store.ts's stock one).
 */
export async function startFerretDB(dataDir: string, binary: string = toolPath('ferretdb')): Promise<LocalMongo> {
  await mkdir(dataDir, { recursive: true })
  const uriFile = join(dataDir, 'ferretdb.uri')
  await rm(uriFile, { force: true })
  const server = ChildServer.start({
    name: 'ferretdb',
    command: binary,
    args: ['-listen', '127.0.0.1:0', '-data', join(dataDir, 'sqlite'), '-uri-file', uriFile],
  })
  const url = await server.waitUntilReady(async () => (await readFile(uriFile, 'utf8')).trim() || undefined)
  return { url, server }
}
