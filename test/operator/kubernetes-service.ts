/**
 * The whole service with EXECUTOR=kubernetes against the harness's servers:
 * the API app listening on a loopback port, the outbox dispatcher handing
 * commands to the KubernetesExecutor, the status projector, the operator, and
 * the test node agent running each Job's containers with the real runner.
 * Everything but the kubelet is the product's own code.
 */
import type { AddressInfo } from 'node:net'
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node'
import { connect, type NatsConnection } from 'nats'
import { Canceller } from '../../api/cancels/canceller.js'
import { Dispatcher } from '../../api/dispatcher/dispatcher.js'
import { FileProcessor } from '../../api/file-processor/file-processor.js'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { toolPath } from '../../api/local/tools.js'
import { createLogger } from '../../api/logger.js'
import { StatusProjector } from '../../api/projector/status-projector.js'
import type { StorageQuotas } from '../../api/files/storage-quota.js'
import { LogProjector } from '../../api/logs/log-projector.js'
import type { Operator } from '../../operator/operator.js'
import { natsPublisher } from '../../operator/terminal-publisher.js'
import { Client } from '../e2e/service.js'
import { startApi, type TestApi } from '../harness/api.js'
import { startNats } from '../harness/nats.js'
import { startS3, type TestS3 } from '../harness/s3.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'
import { jobConfig } from './fixtures.js'
import { newNamespace, settings, startOperator } from './kube-setup.js'
import { NodeAgent, type Outcome } from './node-agent.js'
import { PodRunner } from './pod-runner.js'

export interface KubernetesService {
  api: TestApi
  /** An HTTP client for the listening API, with a business-plan key. */
  client: Client
  baseUrl: string
  apiKey: string
  namespace: string
  s3: TestS3
  /** The operator's own NATS connection. */
  nats: NatsConnection
  natsUrl: string
  operator: Operator
  agent: NodeAgent
  pods: PodRunner
}

/** `allowPrivateNetworks` (default true, so the harness's loopback media server is reachable) is the runners' ALLOW_PRIVATE_NETWORKS. */
export async function startKubernetesService(t: Teardown, kc: KubeConfig, options: { outcome?: Outcome; allowPrivateNetworks?: boolean; storageQuotas?: StorageQuotas } = {}): Promise<KubernetesService> {
  const [nats, s3, dir] = await Promise.all([startNats(t), startS3(t), scratchDir(t, 'ffk-node-')])
  const logger = createLogger('test', process.env.LOG_LEVEL ?? 'silent')
  const s3Client = s3.client()
  t.teardown(() => s3Client.destroy())
  // Acceptance nudges the dispatcher, which needs the app's database: a box filled once both exist.
  const nudge: { dispatcher?: Dispatcher; files?: FileProcessor; canceller?: Canceller } = {}
  const api = await startApi(t, {
    s3: s3Client, s3Bucket: s3.bucket, allowPrivateNetworks: true, ytdlpAvailable: () => true,
    onCommandsAccepted: () => nudge.dispatcher?.nudge(), onFilesQueued: () => nudge.files?.nudge(), onCancelRequested: () => nudge.canceller?.nudge(),
    ...(options.storageQuotas ? { storageQuotas: options.storageQuotas } : {}),
  })
  const namespace = await newNamespace(kc, 'service')

  // API side: its own NATS connection, projector, and the dispatcher creating MediaCommands.
  const apiNats = await connect({ servers: nats.url, name: 'ffkube-api-test' })
  t.teardown(() => apiNats.drain())
  const projector = new StatusProjector({ nats: apiNats, commands: api.app.commands, files: api.app.files, logger })
  await projector.start()
  t.teardown(() => projector.stop())
  const logs = new LogProjector({ nats: apiNats, logs: api.app.commandLogs, logger })
  await logs.start()
  t.teardown(() => logs.stop())
  // As the worker wires it (api/roles/worker.ts): destination credentials go into a per-command Secret.
  const { storageDestinations: destinations, ytdlpCookies: cookies } = api.app
  const executor = new KubernetesExecutor({
    kubeConfig: kc,
    namespace,
    destinationCredentials: async (spec) => (spec.storageDestinationId ? destinations.runnerCredentials(spec.accountId, spec.storageDestinationId) : null),
    // And an account's yt-dlp cookies into another (contracts/ytdlp-cookies.ts).
    ytdlpCookies: async (spec) => cookies.openForRunner(spec.accountId),
  })
  // As the worker role composes it (api/roles/worker.ts): runners are told the room their account has left.
  const dispatcher = new Dispatcher({ commands: api.app.commands, executor, logger, pollIntervalMs: 200, storageRoom: (command) => api.app.files.quota.roomFor(command) })
  nudge.dispatcher = dispatcher
  dispatcher.start()
  t.teardown(() => dispatcher.stop())
  // As the worker runs it: a cancel marks the MediaCommand, the operator stops its Job.
  const canceller = new Canceller({ commands: api.app.commands, nats: apiNats, executor, logger, pollIntervalMs: 200 })
  nudge.canceller = canceller
  canceller.start()
  t.teardown(() => canceller.stop())
  // As the worker runs it: uploads become STORED with a storage_url.
  const files = new FileProcessor({ files: api.app.files, logger, dataDir: dir, ffprobePath: toolPath('ffprobe'), allowPrivateNetworks: true })
  nudge.files = files
  files.start()
  t.teardown(() => files.stop())

  // Cluster side: the chart's storage Secret, the node, the operator.
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace,
    body: { metadata: { name: jobConfig.uploadSecretName }, stringData: { [jobConfig.uploadSecretKey]: JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }) } },
  })
  const pods = new PodRunner({
    kubeConfig: kc, namespace, root: dir, imageCommand: jobConfig.runnerCommand,
    imageEnv: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', FFMPEG_PATH: toolPath('ffmpeg'), FFPROBE_PATH: toolPath('ffprobe'), YTDLP_PATH: toolPath('yt-dlp') },
  })
  const agent = new NodeAgent(kc, namespace, options.outcome ?? 'runner', pods)
  await agent.start()
  t.teardown(() => agent.stop())
  const operatorNats = await connect({ servers: nats.url, name: 'ffkube-operator-test' })
  t.teardown(() => operatorNats.drain())
  const operator = await startOperator(t, kc, settings(namespace, {
    job: {
      ...jobConfig,
      natsUrl: nats.url,
      runnerEnv: { S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region, S3_FORCE_PATH_STYLE: 'true', ALLOW_PRIVATE_NETWORKS: options.allowPrivateNetworks === false ? '0' : '1' },
    },
  }), { nats: operatorNats, publisher: natsPublisher(operatorNats, logger) })

  await api.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = api.app.server.address() as AddressInfo
  const { api_key } = await api.createAccount('business')
  const baseUrl = `http://127.0.0.1:${port}`
  const client = new Client({ baseUrl, apiKey: api_key })
  return { api, client, baseUrl, apiKey: api_key, namespace, s3, nats: operatorNats, natsUrl: nats.url, operator, agent, pods }
}
