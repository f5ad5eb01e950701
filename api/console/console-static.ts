import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { NotFoundError } from '../errors/api-errors.js'

/** Where scripts/build-console.sh writes the bundle: dist/console, beside dist/api. */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url))

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
}

/**
 * The console's pages load only what this origin serves, run no inline
 * script, and cannot be framed; no Referer leaves them.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; media-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
}

interface Asset {
  body: Buffer
  type: string
  etag: string
}

/** The built files, read once: the bundle is a few files of a few hundred kB. */
async function loadAssets(dir: string): Promise<Map<string, Asset>> {
  const names = await readdir(dir).catch(() => [] as string[])
  const assets = new Map<string, Asset>()
  for (const name of names) {
    const type = CONTENT_TYPES[extname(name)]
    if (!type) continue
    const body = await readFile(join(dir, name))
    assets.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` })
  }
  return assets
}

/**
 * Serves the console's bundle at /console/ (same origin as the API, so its
 * session cookie is SameSite=Strict and no CORS is ever needed): index.html
 * and the files beside it, nothing else. A server whose bundle was not built
 * answers 404 with how to build it.
 */
export const consoleStatic: FastifyPluginAsync<{ dir?: string | undefined }> = async (app, options) => {
  const assets = await loadAssets(options.dir ?? DEFAULT_CONSOLE_DIR)
  const send = (reply: FastifyReply, name: string, ifNoneMatch: string | undefined) => {
    const asset = assets.get(name)
    if (!asset) {
      if (assets.size === 0) throw new NotFoundError('the console is not built: scripts/build-console.sh builds it (npm start and npm test run it)')
      throw new NotFoundError(`no console file ${name}`)
    }
    void reply.headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache', etag: asset.etag })
    if (ifNoneMatch === asset.etag) return reply.code(304).send()
    return reply.type(asset.type).send(asset.body)
  }

  app.get('/console', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/'))
  app.get('/console/', { schema: { hide: true } }, async (request, reply) => send(reply, 'index.html', request.headers['if-none-match']))
  app.get<{ Params: { file: string } }>('/console/:file', { schema: { hide: true } }, async (request, reply) => send(reply, request.params.file, request.headers['if-none-match']))
}
