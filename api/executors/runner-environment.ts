/**
 * What a local runner starts with besides its spec: its environment, built
 * once per start of the executor. No NATS: the pool relays its events.
 * Storage credentials reach it only as a file (S3_CREDENTIALS_FILE) that its
 * upload step reads, never as variables.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SANDBOX_ENV, type SandboxHost } from '../../contracts/sandbox.js'

/** The runner's settings, from the service's config. */
export interface RunnerSettings {
  allowPrivateNetworks: boolean
  s3: { endpoint: string | undefined; bucket: string; region: string; forcePathStyle: boolean; accessKeyId?: string | undefined; secretAccessKey?: string | undefined }
  ffmpegPath: string
  ffprobePath: string
  ytdlpPath: string
  /** The jail of every tool the runners start (api/executors/sandbox-host.ts); null: none, said at start. */
  sandbox?: SandboxHost | null
  logLevel?: string
}

/** The runners' environment; writes the managed bucket's credentials file under `<dataDir>/runner` when there are credentials. */
export async function runnerEnvironment(runner: RunnerSettings, dataDir: string): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    LOG_LEVEL: runner.logLevel ?? 'warn',
    ALLOW_PRIVATE_NETWORKS: runner.allowPrivateNetworks ? '1' : '0',
    FFMPEG_PATH: runner.ffmpegPath,
    FFPROBE_PATH: runner.ffprobePath,
    YTDLP_PATH: runner.ytdlpPath,
    ...(runner.sandbox ? { [SANDBOX_ENV]: JSON.stringify(runner.sandbox) } : {}),
    S3_BUCKET: runner.s3.bucket,
    S3_REGION: runner.s3.region,
    S3_FORCE_PATH_STYLE: runner.s3.forcePathStyle ? 'true' : 'false',
    ...(runner.s3.endpoint ? { S3_ENDPOINT: runner.s3.endpoint } : {}),
  }
  if (runner.s3.accessKeyId && runner.s3.secretAccessKey) {
    // A file, not variables: the runner reads it in its upload step only, so the secret is never in its environment.
    const dir = join(dataDir, 'runner')
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const file = join(dir, 's3-credentials.json')
    await writeFile(file, JSON.stringify({ accessKeyId: runner.s3.accessKeyId, secretAccessKey: runner.s3.secretAccessKey }), { mode: 0o600 })
    env.S3_CREDENTIALS_FILE = file
  }
  return env
}
