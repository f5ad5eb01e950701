/**
 * How long a key revoked through one API replica keeps working on another,
 * measured through the API (two replicas in this process, each with its own
 * store client and NATS connection, on one FerretDB and one nats-server):
 *
 *   npm run -s bench -- key-revocation [--keys 50] [--after 20]
 *
 * For each key: the second replica serves it (so it is cached there), the
 * first revokes it, and the second is polled until it answers 401; then
 * `--after` more requests must all be 401. Prints the time from the revoke's
 * return to the first 401 (p50, p99, max), and how many 200s came after a 401.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { S3Client } from '@aws-sdk/client-s3'
import type { FastifyInstance } from 'fastify'
import { MongoClient } from 'mongodb'
import { connect, type NatsConnection } from 'nats'
import { SecretBox } from '../api/crypto/secret-box.js'
import { startLocalMongo } from '../api/local/embedded-mongo.js'
import { startNatsServer } from '../api/local/nats-server.js'
import { createLogger } from '../api/logger.js'
import { buildServer } from '../api/server.js'

async function replica(mongoUrl: string, natsUrl: string, closers: (() => Promise<unknown>)[]): Promise<FastifyInstance> {
  const client = await MongoClient.connect(mongoUrl)
  const nats: NatsConnection = await connect({ servers: natsUrl })
  const app = await buildServer({
    logger: createLogger('bench', 'silent'),
    app: {
      db: client.db('bench_key_revocation'),
      secretBox: new SecretBox([['bench', Buffer.alloc(32, 7)]]),
      // Never called: the route measured reads a command record only.
      s3: new S3Client({ endpoint: 'http://127.0.0.1:9', region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
      s3Bucket: 'unused',
      nats,
      rateLimits: { free: 0, trial: 0, growth: 0, business: 0 },
    },
  })
  closers.unshift(() => app.close(), () => nats.close(), () => client.close())
  return app
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { keys: { type: 'string', default: '50' }, after: { type: 'string', default: '20' } } })
  const keys = Number(values.keys)
  const after = Number(values.after)
  const loadAtStart = loadavg()
  const dir = await mkdtemp(join(tmpdir(), 'ffkube-bench-'))
  const closers: (() => Promise<unknown>)[] = []
  try {
    const ferret = await startLocalMongo(dir)
    closers.unshift(() => ferret.server.stop())
    const nats = await startNatsServer(join(dir, 'nats'))
    closers.unshift(() => nats.server.stop())
    const first = await replica(ferret.url, nats.url, closers)
    const second = await replica(ferret.url, nats.url, closers)
    const get = (key: string) => second.inject({ method: 'GET', url: '/api/v1/commands/cmd_00000000000000000000000000000000', headers: { 'x-api-key': key } })
    const delays: number[] = []
    let polls = 0
    let okAfterRefusal = 0
    for (let i = 0; i < keys; i++) {
      const { api_key, key_id } = await first.accounts.createAccount('business')
      if ((await get(api_key)).statusCode !== 404) throw new Error('the key did not work on the second replica before its revocation')
      await first.accounts.revokeKey(key_id)
      const returned = performance.now()
      for (;;) {
        polls++
        if ((await get(api_key)).statusCode === 401) break
      }
      delays.push(performance.now() - returned)
      for (let k = 0; k < after; k++) if ((await get(api_key)).statusCode !== 401) okAfterRefusal++
    }
    const sorted = [...delays].sort((a, b) => a - b)
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2)
    process.stdout.write(`${keys} keys revoked through one replica; time from the revoke's return to the other replica's first 401, ms: p50 ${at(0.5)}, p99 ${at(0.99)}, max ${sorted.at(-1)!.toFixed(2)}\n`)
    process.stdout.write(`polls of the other replica before its 401 (including it): ${polls} for ${keys} keys; non-401 answers in the ${after} requests after each first 401: ${okAfterRefusal}\n`)
    const load = (l: number[]) => l.map((n) => n.toFixed(2)).join(', ')
    process.stdout.write(`Load average (1, 5, 15 min): ${load(loadAtStart)} at the start, ${load(loadavg())} at the end.\n`)
  } finally {
    for (const close of closers) await close().catch(() => undefined)
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
