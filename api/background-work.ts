/**
 * What runs beside the HTTP API in one process: the executor the dispatcher
 * hands commands to, the status projector that turns runners' events into
 * records, and the file processor. Started after the connections, before the
 * dispatcher; stopped before the connections close.
 */
import { KubeConfig } from '@kubernetes/client-node'
import type { Config } from './config.js'
import type { Connections } from './connections.js'
import type { SecretBox } from './crypto/secret-box.js'
import type { DestinationCredentialSource, Executor } from './executors/executor.js'
import { KubernetesExecutor } from './executors/kubernetes-executor.js'
import { LocalExecutor } from './executors/local-executor.js'
import { detectSandbox, toolsReadOnly, type SandboxLevel } from './executors/sandbox-host.js'
import { isExecutable, resolveStartGate, resolveTool } from './executors/tool-paths.js'
import { FileProcessor } from './file-processor/file-processor.js'
import type { Logger } from './logger.js'
import type { ProjectionRecorder } from './metrics/service-metrics.js'
import { StatusProjector } from './projector/status-projector.js'
import { StorageDestinationRepository } from './storage-destinations/storage-destination-repository.js'

export interface BackgroundWork {
  executor: Executor
  /** Local mode runs yt-dlp on this host: without the binary the yt-dlp endpoints answer 501. */
  ytdlpAvailable: () => boolean
  /** The API queued a file: the file processor looks now instead of at its next poll. */
  nudgeFileProcessor(): void
  /** The jail the tools of this process run in (api/executors/sandbox-host.ts), for the start-up log. */
  sandbox: SandboxLevel
  start(): Promise<void>
  stop(): Promise<void>
}

/** Opens a command's storage-destination credentials for its runner's upload step (never its spec). */
function destinationCredentialSource(connections: Connections, secretBox: SecretBox | undefined): DestinationCredentialSource {
  const destinations = secretBox ? new StorageDestinationRepository(connections.db, secretBox) : null
  return async (spec) => (destinations && spec.storageDestinationId ? destinations.runnerCredentials(spec.accountId, spec.storageDestinationId) : null)
}

/**
 * `config` must have its service URLs resolved (local mode fills them in);
 * `secretBox` opens storage-destination credentials (without it, commands
 * with a destination fail their upload).
 */
export function backgroundWork(
  config: Config,
  connections: Connections,
  logger: Logger,
  secretBox?: SecretBox,
  metrics?: ProjectionRecorder,
  testOnly: { unsafeDisableFfmpegPolicyForTests?: boolean } = {},
): BackgroundWork {
  const destinationCredentials = destinationCredentialSource(connections, secretBox)
  const tools = { ffmpeg: resolveTool('ffmpeg'), ffprobe: resolveTool('ffprobe'), ytdlp: resolveTool('yt-dlp'), startGate: resolveStartGate() }
  // The file processor's ffprobe is jailed in every mode; in a worker pod without bwrap that is the limits, said loudly.
  const sandbox = detectSandbox(toolsReadOnly([tools.ffmpeg, tools.ffprobe, tools.ytdlp], tools.startGate ? [tools.startGate] : [], { dataDir: config.dataDir }), logger)
  const projector = new StatusProjector({ nats: connections.nats, db: connections.db, s3: connections.s3, bucket: connections.s3Bucket, logger, ...(metrics ? { metrics } : {}) })
  const files = new FileProcessor({
    db: connections.db,
    s3: connections.s3,
    bucket: connections.s3Bucket,
    logger,
    dataDir: config.dataDir,
    ffprobePath: tools.ffprobe,
    allowPrivateNetworks: config.allowPrivateNetworks,
    sandbox: sandbox.host,
  })
  let local: LocalExecutor | null = null
  let executor: Executor
  if (config.executor === 'local') {
    local = new LocalExecutor({
      db: connections.db,
      nats: connections.nats,
      logger,
      dataDir: config.dataDir,
      concurrency: config.localRunnerConcurrency,
      deadlineMs: config.commandDeadlineSeconds * 1000,
      workDirMaxBytes: config.commandWorkDirMaxBytes,
      destinationCredentials,
      ...(testOnly.unsafeDisableFfmpegPolicyForTests ? { unsafeDisableFfmpegPolicyForTests: true } : {}),
      runner: {
        natsUrl: config.natsUrl as string,
        allowPrivateNetworks: config.allowPrivateNetworks,
        s3: config.s3,
        ffmpegPath: tools.ffmpeg,
        ffprobePath: tools.ffprobe,
        ytdlpPath: tools.ytdlp,
        startGate: tools.startGate,
        sandbox: sandbox.host,
      },
    })
    executor = local
  } else {
    const kubeConfig = new KubeConfig()
    kubeConfig.loadFromDefault()
    executor = new KubernetesExecutor({ kubeConfig, namespace: config.kubeNamespace, destinationCredentials })
  }
  // Checked once: a yt-dlp installed later is seen on the next start. The runner image always has one.
  const ytdlp = config.executor === 'local' ? isExecutable(resolveTool('yt-dlp')) : true
  return {
    executor,
    ytdlpAvailable: () => ytdlp,
    nudgeFileProcessor: () => files.nudge(),
    sandbox: sandbox.level,
    async start() {
      await projector.start()
      await local?.start()
      files.start()
    },
    async stop() {
      await files.stop()
      await local?.stop()
      await projector.stop()
    },
  }
}
