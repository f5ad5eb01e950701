import { KubeConfig } from '@kubernetes/client-node'
import type { SandboxHost } from '../../contracts/sandbox.js'
import { cachedPlans } from '../accounts/plan-cache.js'
import type { Logger } from '../logger.js'
import { Canceller } from '../cancels/canceller.js'
import { subscribeDispatchNudges } from '../dispatcher/dispatch-nudges.js'
import { Dispatcher } from '../dispatcher/dispatcher.js'
import { queueDepthByPlan } from '../dispatcher/queue-depth.js'
import type { DestinationCredentialSource, Executor, YtdlpCookieSource } from '../executors/executor.js'
import { KubernetesExecutor } from '../executors/kubernetes-executor.js'
import { LocalExecutor } from '../executors/local-executor.js'
import { detectSandbox, toolsReadOnly, type SandboxLevel } from '../executors/sandbox-host.js'
import { resolveTool } from '../executors/tool-paths.js'
import type { Repositories } from '../repositories.js'
import { FileProcessor } from '../file-processor/file-processor.js'
import { RetentionSweep } from '../files/retention-sweep.js'
import { StatusProjector } from '../projector/status-projector.js'
import { LogProjector } from '../logs/log-projector.js'
import type { Role, RoleContext, ServiceParts } from './role.js'

/** The worker as the other roles of its process see it. */
export interface WorkerRole extends Role {
  /** The API recorded commands: the dispatcher looks now instead of at its next poll. */
  commandsAccepted(): void
  /** The API queued a file: the file processor looks now instead of at its next poll. */
  filesQueued(): void
  /** The API recorded a cancel: the canceller looks now instead of at its next poll. */
  cancelRequested(): void
  /** The jail the tools of this process run in (api/executors/sandbox-host.ts), for the start-up log. */
  sandbox: SandboxLevel
}

/** Opens a command's storage-destination credentials for its runner's upload step (never its spec). */
function destinationCredentialSource({ storageDestinations: destinations }: Repositories): DestinationCredentialSource {
  return async (spec) => (spec.storageDestinationId ? destinations.runnerCredentials(spec.accountId, spec.storageDestinationId) : null)
}

/**
 * Opens the cookies.txt of a yt-dlp command's account, for its yt-dlp only
 * (contracts/ytdlp-cookies.ts). Cookies that cannot be opened (their key was
 * dropped from ENCRYPTION_KEYS) are logged and left out: the command runs
 * without them rather than never being dispatched.
 */
function ytdlpCookieSource({ ytdlpCookies: cookies }: Repositories, logger: Logger): YtdlpCookieSource {
  return async (spec) => {
    try {
      return await cookies.openForRunner(spec.accountId)
    } catch (err) {
      logger.error({ err, command_id: spec.commandId, account_id: spec.accountId }, "could not open the account's yt-dlp cookies: yt-dlp runs without them")
      return null
    }
  }
}

/** Runners on this host (EXECUTOR=local), or MediaCommands for the operator. */
function executorFor(context: RoleContext, host: { tools: ToolPaths; sandbox: SandboxHost | null }, parts: ServiceParts): Executor {
  const { config, connections, repositories, logger } = context
  const destinationCredentials = destinationCredentialSource(repositories)
  if (config.executor !== 'local') {
    const kubeConfig = new KubeConfig()
    kubeConfig.loadFromDefault()
    return new KubernetesExecutor({ kubeConfig, namespace: config.kubeNamespace, destinationCredentials, ytdlpCookies: ytdlpCookieSource(repositories, logger) })
  }
  const { tools, sandbox } = host
  return new LocalExecutor({
    commands: repositories.commands,
    nats: connections.nats,
    logger,
    dataDir: config.dataDir,
    concurrency: config.localRunnerConcurrency,
    deadlineMs: config.commandDeadlineSeconds * 1000,
    workDirMaxBytes: config.commandWorkDirMaxBytes,
    destinationCredentials,
    ytdlpCookies: ytdlpCookieSource(repositories, logger),
    ...(parts.poolWorkerMain ? { poolWorkerMain: parts.poolWorkerMain } : {}),
    runner: {
      allowPrivateNetworks: config.allowPrivateNetworks,
      s3: config.s3,
      ffmpegPath: tools.ffmpeg,
      ffprobePath: tools.ffprobe,
      ytdlpPath: tools.ytdlp,
      sandbox,
    },
  })
}

/** The tools a worker's runners and file processor start. */
interface ToolPaths {
  ffmpeg: string
  ffprobe: string
  ytdlp: string
}

/**
 * The worker: the status projector turning runners' events into records, the
 * executor (runners on this host, or MediaCommands for the operator), the
 * dispatcher handing accepted commands to it, the file processor, and the
 * retention sweep.
 */
export function workerRole(context: RoleContext, parts: ServiceParts = {}): WorkerRole {
  const { config, connections, repositories, logger, metrics } = context
  const tools = { ffmpeg: resolveTool('ffmpeg'), ffprobe: resolveTool('ffprobe'), ytdlp: resolveTool('yt-dlp') }
  // The file processor's ffprobe is jailed in every mode; in a worker pod without bwrap that is the limits, said loudly.
  const sandbox = detectSandbox(toolsReadOnly([tools.ffmpeg, tools.ffprobe, tools.ytdlp], [], { dataDir: config.dataDir }), logger)
  const { commands } = repositories
  const logs = new LogProjector({ nats: connections.nats, logs: repositories.commandLogs, logger })
  const files = new FileProcessor({
    files: repositories.files,
    logger,
    dataDir: config.dataDir,
    ffprobePath: tools.ffprobe,
    allowPrivateNetworks: config.allowPrivateNetworks,
    sandbox: sandbox.host,
  })
  const executor = executorFor(context, { tools, sandbox: sandbox.host }, parts)
  const local = executor instanceof LocalExecutor ? executor : null
  const planOf = async (accountId: string) => (await repositories.accounts.findAccount(accountId))?.plan ?? null
  const plans = cachedPlans(planOf)
  const dispatcher = new Dispatcher({
    commands,
    executor,
    logger,
    metrics,
    concurrencyLimits: config.concurrencyLimits,
    accountPlan: plans,
    // The plan the concurrency limit used: a hand-off reads the account's plan at most once per PLAN_CACHE_MS, not once per command.
    storageRoom: async (command) => repositories.files.quota.roomFor(command, (await plans(command.account_id)) ?? undefined),
  })
  metrics?.readQueueDepthFrom(() => queueDepthByPlan(commands, planOf))
  // A command that ended frees its account's slot: the dispatcher may serve the account again now.
  const projector = new StatusProjector({ nats: connections.nats, commands, files: repositories.files, logger, metrics, onCommandEnded: () => dispatcher.nudge() })
  // Beside every executor: the worker Deployment on a cluster runs it as local mode does.
  const retention = new RetentionSweep({ files: repositories.files, logger, onSwept: (expired) => metrics?.retentionSwept(expired) })
  const canceller = new Canceller({ commands, nats: connections.nats, executor, logger, onCancelled: () => metrics.cancelCarriedOut() })
  let nudges: ReturnType<typeof subscribeDispatchNudges> | null = null
  return {
    probes: [connections.probes.mongodb, connections.probes.nats, connections.probes.storage],
    commandsAccepted: () => dispatcher.nudge(),
    filesQueued: () => files.nudge(),
    cancelRequested: () => canceller.nudge(),
    sandbox: sandbox.level,
    // Consumers before producers: runners' events have a projector before the first runner starts.
    async start() {
      await projector.start()
      await logs.start()
      await local?.start()
      files.start()
      dispatcher.start()
      canceller.start()
      retention.start()
      // API processes of their own announce accepted commands here (dispatch-nudges.ts).
      nudges = subscribeDispatchNudges(connections.nats, () => dispatcher.nudge())
    },
    async stop() {
      nudges?.unsubscribe()
      await retention.stop()
      await canceller.stop()
      await dispatcher.stop()
      await files.stop()
      await local?.stop()
      await logs.stop()
      await projector.stop()
    },
  }
}
