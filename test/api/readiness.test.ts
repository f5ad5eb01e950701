import t from 'tap'
import { openConnections, type Connections } from '../../api/connections.js'
import { createLogger } from '../../api/logger.js'
import { buildServer } from '../../api/server.js'
import { eventually } from '../harness/eventually.js'
import { startMongo } from '../harness/mongo.js'
import { startNats } from '../harness/nats.js'
import { startS3 } from '../harness/s3.js'

/**
 * /readyz decides by what is true of this replica alone (docs/adr/0009-readiness.md): a shared
 * dependency's outage, which every replica sees at once, must not take them all out of the Service.
 * Real MongoDB-wire server, NATS and S3 server; NATS is the one stopped (the harness can stop and
 * restart it on the same port).
 */
t.test('a replica stays ready through a NATS outage once it reached every dependency, and says the outage in its checks', async (t) => {
  const [mongo, nats, s3] = await Promise.all([startMongo(t), startNats(t), startS3(t)])
  if (!nats.stop || !nats.restart) throw new Error('this test stops NATS: it needs the harness to start its own (unset NATS_URL)')
  const connections: Connections = await openConnections({
    mongodbUrl: mongo.url, mongodbDatabase: mongo.dbName, natsUrl: nats.url, name: 'readiness-test',
    s3: { endpoint: s3.endpoint, bucket: s3.bucket, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true },
  })
  t.teardown(() => connections.close())
  const probes = [connections.probes.mongodb, connections.probes.nats, connections.probes.storage]
  const replica = await buildServer({ logger: createLogger('test', 'silent'), probes })
  t.teardown(() => replica.close())
  const readyz = async (server = replica) => {
    const answer = await server.inject({ method: 'GET', url: '/readyz' })
    return { code: answer.statusCode, body: answer.json() as { status: string; checks: Record<string, string> } }
  }

  t.same(await readyz(), { code: 200, body: { status: 'ready', checks: { mongodb: 'ok', nats: 'ok', storage: 'ok' } } })

  await nats.stop()
  const during = await readyz()
  t.same(during, { code: 200, body: { status: 'degraded', checks: { mongodb: 'ok', nats: 'unavailable', storage: 'ok' } } },
    'still routed to: the outage is every replica\'s, and the API answers for itself')

  // A replica that has not reached NATS once since it started is not ready: that is its own state.
  const fresh = await buildServer({ logger: createLogger('test', 'silent'), probes })
  t.teardown(() => fresh.close())
  t.same(await readyz(fresh), { code: 503, body: { status: 'unavailable', checks: { mongodb: 'ok', nats: 'unavailable', storage: 'ok' } } })

  await nats.restart()
  await eventually('the NATS connection to come back', async () => (await readyz()).body.checks.nats === 'ok', 60_000)
  t.same(await readyz(), { code: 200, body: { status: 'ready', checks: { mongodb: 'ok', nats: 'ok', storage: 'ok' } } })
  t.same(await readyz(fresh), { code: 200, body: { status: 'ready', checks: { mongodb: 'ok', nats: 'ok', storage: 'ok' } } }, 'ready once it reached every dependency')
})
