import { randomUUID } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import { toolPath } from '../../api/local/tools.js'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { StatusEvent } from '../../contracts/status-events.js'
import { main } from '../../runner-image/runner/main.js'
import type { TestS3 } from '../harness/s3.js'

/** A CommandSpec with defaults for what a test does not care about. */
export function specOf(partial: Partial<CommandSpec>): CommandSpec {
  return {
    commandId: randomUUID(),
    accountId: 'acct-test',
    commandType: 'FFMPEG_COMMAND',
    inputFiles: {},
    outputFiles: {},
    ffmpegCommands: [],
    ytdlp: null,
    storageDestinationId: null,
    submittedAt: new Date().toISOString(),
    ...partial,
  }
}

export interface RunnerRun {
  exitCode: number
  events: StatusEvent[]
  terminal: StatusEvent
  /** Everything the runner wrote to stdout. */
  raw: string
}

/** Runs the runner's main in-process on `spec` with a fresh work dir, events as JSON lines. */
export async function runRunner(dir: string, spec: CommandSpec, s3: TestS3, env: NodeJS.ProcessEnv = {}): Promise<RunnerRun> {
  const workDir = join(dir, `work-${spec.commandId}`)
  await mkdir(workDir, { recursive: true })
  const stdout = new PassThrough()
  let raw = ''
  stdout.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')))
  const exitCode = await main({
    argv: ['--spec', '-', '--work-dir', workDir],
    env: {
      PATH: process.env.PATH,
      LOG_LEVEL: 'warn',
      FFMPEG_PATH: toolPath('ffmpeg'),
      FFPROBE_PATH: toolPath('ffprobe'),
      YTDLP_PATH: toolPath('yt-dlp'),
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: s3.bucket,
      S3_REGION: s3.region,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      ...env,
    },
    stdin: Readable.from([JSON.stringify(spec)]),
    stdout,
  })
  // Status events; the `{"log_chunk": …}` lines beside them are the tools' stderr (test/unit/command-logs.test.ts).
  const events = raw.split('\n').filter((line) => line && !line.startsWith('{"log_chunk"')).map((line) => JSON.parse(line) as StatusEvent)
  // With the NATS reporter nothing reaches stdout; the test reads the stream instead.
  const terminal = events.at(-1) as StatusEvent
  return { exitCode, events, terminal, raw }
}

export interface PhaseRun {
  exitCode: number
  events: StatusEvent[]
}

/**
 * One phase as a Job container runs it: its own main() call, the spec in
 * FFKUBE_COMMAND_SPEC (no --spec, no stdin), and only the environment given.
 */
export async function runPhaseAsContainer(name: string, spec: CommandSpec, workDir: string, env: NodeJS.ProcessEnv = {}): Promise<PhaseRun> {
  const stdout = new PassThrough()
  let raw = ''
  stdout.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')))
  const exitCode = await main({
    argv: ['--phase', name, '--work-dir', workDir],
    env: {
      PATH: process.env.PATH, LOG_LEVEL: 'warn', ALLOW_PRIVATE_NETWORKS: '1', FFKUBE_COMMAND_SPEC: JSON.stringify(spec),
      FFMPEG_PATH: toolPath('ffmpeg'), FFPROBE_PATH: toolPath('ffprobe'), YTDLP_PATH: toolPath('yt-dlp'),
      ...env,
    },
    stdin: Readable.from([]),
    stdout,
  })
  return { exitCode, events: raw.split('\n').filter((line) => line && !line.startsWith('{"log_chunk"')).map((line) => JSON.parse(line) as StatusEvent) }
}

/** The bucket's coordinates every container gets; the credentials file only the upload phase gets. */
export function storageEnv(s3: TestS3): NodeJS.ProcessEnv {
  return { S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region, S3_FORCE_PATH_STYLE: 'true' }
}
