/**
 * Two API replicas on one store and one NATS, as two pods would run: the first
 * from startApi, the second built on a MongoDB client of its own (with command
 * monitoring, so a test can count that replica's store reads) and a NATS
 * connection of its own. NATS is a local server whatever NATS_URL says, so a
 * test may stop it.
 */
import type { Test } from 'tap'
import { MongoClient } from 'mongodb'
import { connect, type NatsConnection } from 'nats'
import { createLogger } from '../../api/logger.js'
import type { ServiceMetrics } from '../../api/metrics/service-metrics.js'
import { buildServer } from '../../api/server.js'
import { startApi } from './api.js'
import { startNats } from './nats.js'

/** No rate limit bites: the tests count store reads, not refusals. */
const UNLIMITED = { free: 0, trial: 0, growth: 0, business: 0 }

export async function startTwoReplicas(t: Test, clock: () => Date, options: { metrics?: ServiceMetrics } = {}) {
  const nats = await startNats(t, { host: '127.0.0.1' })
  /** A NATS connection of its own, closed when the test ends. */
  const natsFor = async (): Promise<NatsConnection> => {
    const connection = await connect({ servers: nats.url })
    t.teardown(() => connection.close())
    return connection
  }
  const first = await startApi(t, { clock, nats: await natsFor() })
  const client = await MongoClient.connect(first.mongo.url, { monitorCommands: true })
  t.teardown(() => client.close())
  const { metrics } = options
  const second = await buildServer({
    logger: createLogger('test', 'silent'),
    ...(metrics ? { metrics } : {}),
    app: {
      db: client.db(first.mongo.dbName), secretBox: first.secretBox, s3: first.s3, s3Bucket: first.s3Bucket, clock, rateLimits: UNLIMITED,
      nats: await natsFor(), ...(metrics ? { commandReadMetrics: metrics } : {}),
    },
  })
  t.teardown(() => second.close())
  return { nats, natsFor, first, second, secondClient: client }
}
