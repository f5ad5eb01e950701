import { mkdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { ChildServer } from './child-server.js'
import { toolPath } from './tools.js'

/** A FerretDB (MongoDB wire protocol over SQLite or PostgreSQL) listening on a loopback port. */
export interface LocalMongo {
  url: string
  server: ChildServer
}

/** FerretDB's storage: SQLite files under the data dir (the default), or a PostgreSQL database. */
export type FerretBackend = { kind: 'sqlite' } | { kind: 'postgresql'; url: string }

/**
 * Starts FerretDB on a free loopback port, keeping its URI file (and, for the
 * SQLite backend, its databases) under `dataDir`. The PostgreSQL backend needs
 * a running server (see startPostgres in ./postgres.ts), which the caller stops
 * after FerretDB.
 */
export async function startFerretDB(dataDir: string, backend: FerretBackend = { kind: 'sqlite' }): Promise<LocalMongo> {
  await mkdir(dataDir, { recursive: true })
  const uriFile = join(dataDir, 'ferretdb.uri')
  await rm(uriFile, { force: true })
  const storage = backend.kind === 'postgresql' ? ['-postgresql-url', backend.url] : ['-data', join(dataDir, 'sqlite')]
  const server = ChildServer.start({
    name: 'ferretdb',
    command: toolPath('ferretdb'),
    args: ['-listen', '127.0.0.1:0', ...storage, '-uri-file', uriFile],
  })
  const url = await server.waitUntilReady(async () => (await readFile(uriFile, 'utf8')).trim() || undefined)
  return { url, server }
}
