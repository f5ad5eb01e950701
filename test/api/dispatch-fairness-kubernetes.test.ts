/**
 * Kubernetes mode against a real kube-apiserver: the dispatcher decides the
 * order and the limits there too. The MediaCommands it creates follow the
 * round robin across accounts, and an account at its limit gets no more
 * until one of its commands ends.
 */
import { randomUUID } from 'node:crypto'
import { CustomObjectsApi } from '@kubernetes/client-node'
import { MongoClient } from 'mongodb'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { MediaCommand } from '../../contracts/media-command.js'
import type { Plan } from '../../api/accounts/plans.js'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import { Dispatcher } from '../../api/dispatcher/dispatcher.js'
import type { Executor } from '../../api/executors/executor.js'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { createLogger } from '../../api/logger.js'
import { startKube } from '../harness/kube.js'
import { startMongo } from '../harness/mongo.js'
import { cr, installCrd, newNamespace } from '../operator/kube-setup.js'
import { COMMAND_DRAFT } from './dispatch-fixtures.js'

t.test('in Kubernetes mode the dispatcher creates MediaCommands round robin across accounts and within each plan\'s limit', async (t) => {
  const [kube, mongo] = await Promise.all([startKube(t), startMongo(t)])
  const kc = kube.kubeConfig()
  await installCrd(kc)
  const namespace = await newNamespace(kc, 'fair')
  const objects = kc.makeApiClient(CustomObjectsApi)
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  const commands = new CommandRepository(db)
  await commands.ensureIndexes()

  // The Kubernetes executor itself, with the order of its calls recorded (a CR's creationTimestamp has whole seconds only).
  const kubernetes = new KubernetesExecutor({ kubeConfig: kc, namespace, destinationCredentials: async () => null })
  const order: string[] = []
  const executor: Executor = { name: 'kubernetes', execute: async (spec: CommandSpec) => void (order.push(spec.commandId), await kubernetes.execute(spec)) }
  let ms = Date.parse('2026-01-01T00:00:00Z')
  const now = () => new Date(ms++)
  const accept = async (accountId: string, count: number) => {
    const ids: string[] = []
    for (let i = 0; i < count; i++) {
      // Inserted one at a time, as separate requests would.
      const doc = newCommandDocument(COMMAND_DRAFT, { commandId: randomUUID(), accountId }, now())
      await commands.insert([doc])
      ids.push(doc._id)
    }
    return ids
  }
  const plans: Record<string, Plan> = { acc_a: 'free', acc_b: 'free' }
  const dispatcher = new Dispatcher({
    commands,
    executor,
    logger: createLogger('test', 'silent'),
    now,
    concurrencyLimits: { free: 2, trial: 2, growth: 2, business: 2 },
    accountPlan: async (id) => plans[id] ?? null,
  })
  const a = await accept('acc_a', 4)
  const [b] = await accept('acc_b', 1)

  t.equal(await dispatcher.drain(), 3, 'two of A\'s four (its limit) and B\'s one')
  t.same(order, [a[0], b, a[1]], 'in turn: A, B, A')
  const created = async () => {
    const list = (await objects.listNamespacedCustomObject({ ...cr, namespace })) as { items: MediaCommand[] }
    return list.items.map((mc) => mc.metadata.name).sort()
  }
  t.same(await created(), [a[0], a[1], b].sort(), 'a MediaCommand for each, and none for the commands over the limit')

  // One of A's ends, as the status projector records it.
  const doc = (await db.collection<CommandDocument>('commands').findOne({ _id: a[0]! }))!
  t.ok(await commands.writeProjection(doc, { status: 'SUCCESS', completed_at: now() }))
  t.equal(await dispatcher.drain(), 1, 'one slot freed, one more')
  t.same(order.at(-1), a[2])
  t.same(await created(), [a[0], a[1], a[2], b].sort())
})
