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
export function backgroundWork(config: Config, connections: Connections, logger: Logger, secretBox?: SecretBox, metrics?: ProjectionRecorder): BackgroundWork {
  const destinationCredentials = destinationCredentialSource(connections, secretBox)
  const projector = new StatusProjector({ nats: connections.nats, db: connections.db, s3: connections.s3, logger, ...(metrics ? { metrics } : {}) })
  const files = new FileProcessor({
    db: connections.db,
    s3: connections.s3,
    bucket: connections.s3Bucket,
    logger,
    dataDir: config.dataDir,
    ffprobePath: resolveTool('ffprobe'),
    allowPrivateNetworks: config.allowPrivateNetworks,
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
      runner: {
        natsUrl: config.natsUrl as string,
        allowPrivateNetworks: config.allowPrivateNetworks,
        s3: config.s3,
        ffmpegPath: resolveTool('ffmpeg'),
        ffprobePath: resolveTool('ffprobe'),
        ytdlpPath: resolveTool('yt-dlp'),
        startGate: resolveStartGate(),
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
