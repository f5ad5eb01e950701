/**
 * Local mode's warm runner: the same runCommand (phases.ts: phases 1 to 3 in
 * one process) as main.ts without --phase, but one process runs many
 * commands, one at a time, so node's start and module loading (the AWS SDK)
 * are paid once instead of per command.
 *
 *   node dist/runner-image/runner/pool-worker.js
 *
 * stdin: one JSON line per job, `{"spec": CommandSpec, "workDir": DIR,
 * "destinationCredentials"?: {...}, "ytdlpCookiesFile"?: PATH}`; stdout: the job's status events, one
 * JSON line each (JsonLinesReporter), then `{"commandId", "status"}` when it
 * ended. The parent (api/executors/runner-pool.ts) publishes the events to
 * JetStream: a worker holds no NATS connection. A storage destination's
 * credentials come beside the spec, never in it: held in memory for that one
 * job and handed only to its upload phase.
 * ffmpeg, ffprobe and yt-dlp still run as their own processes with PATH and
 * LANG only, jailed as FFKUBE_SANDBOX says (contracts/tool-process.ts); storage credentials are read from
 * S3_CREDENTIALS_FILE by the upload phase, as in main.ts. When stdin closes
 * (the service stopped or died) the worker kills its process group, so no
 * ffmpeg outlives it and the next start's recovery decides what to re-run.
 */
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { pino } from 'pino'
import { parseDestinationCredentials, type DestinationCredentials } from '../../contracts/destination-credentials.js'
import type { FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import { readRunnerConfig } from './config.js'
import { runCommand } from './phases.js'
import { JsonLinesReporter } from './report/reporter.js'
import { parseCommandSpec } from './spec.js'
import { preloadUploader } from './upload/upload-phase.js'
import { uploadTargetFor } from './upload/upload-target.js'

/** The worker loop; main() runs it with the policy's planner, and so does every entry point of the service. */
export async function runPoolWorker(parts: { ffmpegPlanner?: FfmpegPlanner } = {}): Promise<void> {
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { component: 'runner-pool-worker' } }, pino.destination(2))
  const config = readRunnerConfig(process.env)
  // Loaded now, while idle, rather than during a command's fetch.
  preloadUploader()
  const lines = createInterface({ input: process.stdin })
  // stdin closed means the service stopped or died: take any tool still running down with this worker at once.
  lines.once('close', () => process.kill(-process.pid, 'SIGKILL'))
  for await (const line of lines) {
    if (!line.trim()) continue
    const job = JSON.parse(line) as { spec: unknown; workDir: string; destinationCredentials?: unknown; ytdlpCookiesFile?: unknown }
    const spec = parseCommandSpec(JSON.stringify(job.spec))
    const log = logger.child({ command_id: spec.commandId })
    // Malformed credentials fail the upload phase (no credentials), never the worker.
    let destinationCredentials: DestinationCredentials | null = null
    if (job.destinationCredentials) {
      try {
        destinationCredentials = parseDestinationCredentials(JSON.stringify(job.destinationCredentials))
      } catch (error) {
        log.warn({ err: error }, 'unusable storage destination credentials in the job message')
      }
    }
    let status: 'SUCCESS' | 'FAILED' | 'UNREPORTED'
    try {
      status = await runCommand(spec, {
        // The account's cookies.txt, for this job's yt-dlp only (contracts/ytdlp-cookies.ts).
        config: { ...config, ytdlpCookiesFile: typeof job.ytdlpCookiesFile === 'string' ? job.ytdlpCookiesFile : null },
        workDir: job.workDir,
        reporter: new JsonLinesReporter(spec.commandId, process.stdout),
        logger,
        uploadTarget: () => uploadTargetFor(spec, config, process.env, destinationCredentials),
        ...(parts.ffmpegPlanner ? { ffmpegPlanner: parts.ffmpegPlanner } : {}),
      })
    } catch (error) {
      log.error({ err: error }, 'could not report the outcome')
      status = 'UNREPORTED'
    }
    process.stdout.write(`${JSON.stringify({ commandId: spec.commandId, status })}\n`)
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runPoolWorker().catch((error: unknown) => {
    process.stderr.write(`runner pool worker failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(2)
  })
}
