/**
 * The whole service as `npm start` runs it (`node dist/api/main.js`, local
 * executor, projector, file processor, dispatcher), as a child process
 * against the harness's FerretDB, NATS and versitygw, so a test can SIGKILL it
 * and start it again on the same data.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { makeClip, serveFiles } from '../harness/media.js'
import { startMongo } from '../harness/mongo.js'
import { startNats } from '../harness/nats.js'
import { startS3, type TestS3 } from '../harness/s3.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

export interface ServiceEnvironment {
  env: NodeJS.ProcessEnv
  s3: TestS3
  dataDir: string
}

/** Harness servers and the environment pointing the service at them. */
export async function serviceEnvironment(t: Teardown, extra: NodeJS.ProcessEnv = {}): Promise<ServiceEnvironment> {
  const [mongo, nats, s3, dataDir] = await Promise.all([startMongo(t), startNats(t), startS3(t), scratchDir(t, 'ffkube-e2e-')])
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    FFKUBE_CACHE: process.env.FFKUBE_CACHE,
    PORT: '0',
    EXECUTOR: 'local',
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'warn',
    FFKUBE_DATA_DIR: dataDir,
    MONGODB_URL: mongo.url,
    MONGODB_DATABASE: mongo.dbName,
    NATS_URL: nats.url,
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: s3.bucket,
    S3_REGION: s3.region,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    ALLOW_PRIVATE_NETWORKS: '1',
    RATE_LIMIT_BUSINESS_PER_MINUTE: '0',
    ...extra,
  }
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name]
  return { env, s3, dataDir }
}

export interface RunningService {
  baseUrl: string
  apiKey: string
  child: ChildProcess
  exited: Promise<number | null>
  /** The last 200 kB the service wrote (its pino log on stdout, warnings on stderr). */
  log(): string
}

/**
 * Starts the service and waits until it prints its URL and key. `entry` is
 * the built entry point: `dist/api/main.js`, or a test-only one beside this file.
 */
export async function startService(t: Teardown, environment: ServiceEnvironment, entry = 'dist/api/main.js'): Promise<RunningService> {
  const child = spawn(process.execPath, [entry], { env: environment.env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT')
      await exited
    }
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-200_000)
    if (process.env.E2E_LOG_LEVEL) process.stderr.write(chunk)
  })
  const { baseUrl, apiKey } = await new Promise<{ baseUrl: string; apiKey: string }>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      // pino logs go to stdout, after the two banner lines.
      stderr = (stderr + chunk.toString()).slice(-200_000)
      const listening = /listening on (http:\/\/\S+)/.exec(out)
      const key = /API key \(business plan\): (ffsk_[0-9a-f]{64})\n/.exec(out)
      if (listening && key) resolve({ baseUrl: listening[1]!, apiKey: key[1]! })
    })
    child.once('exit', (code) => reject(new Error(`the service exited ${code} before listening:\n${stderr}`)))
  })
  return { baseUrl, apiKey, child, exited, log: () => stderr }
}

/** The service started on `environment`, a client of it, and the body of a remux of a 1 s 320×240 clip served over HTTP. */
export async function serviceWithRemux(t: Teardown, environment: ServiceEnvironment): Promise<{ service: RunningService; api: Client; remux: { input_files: Record<string, string>; output_files: Record<string, string>; ffmpeg_command: string } }> {
  const dir = await scratchDir(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const remux = { input_files: { in_v: media.url(clip) }, output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}' }
  return { service, api: new Client(service), remux }
}

/** One more account, made with the admin CLI against the service's database and keys. */
export async function createAccount(environment: ServiceEnvironment, plan: string): Promise<{ account_id: string; api_key: string; key_id: string }> {
  const child = spawn(process.execPath, ['dist/api/admin/cli.js', 'create-account', '--plan', plan], { env: environment.env, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`create-account exited ${String(code)}`)
  return JSON.parse(out) as { account_id: string; api_key: string; key_id: string }
}

/** A JSON answer, as loosely typed as Fastify's inject().json(): tests check shapes with t.match. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/** The body as JSON, or as the text it is: an answer that is not the API's must still be shown. */
function parsedOrText(text: string): Json {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** A small client for the service's HTTP API. */
export class Client {
  constructor(private readonly service: { baseUrl: string; apiKey: string }) {}

  async request(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
    const response = await fetch(`${this.service.baseUrl}/api/v1${path}`, {
      method,
      headers: { 'x-api-key': this.service.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await response.text()
    return { status: response.status, body: text ? parsedOrText(text) : null }
  }

  /** POST /files/upload as a browser's form sends it: one `file` part. */
  async upload(data: Uint8Array, filename: string, type: string): Promise<{ status: number; body: Json }> {
    const form = new FormData()
    form.append('file', new Blob([data], { type }), filename)
    const response = await fetch(`${this.service.baseUrl}/api/v1/files/upload`, { method: 'POST', headers: { 'x-api-key': this.service.apiKey }, body: form })
    return { status: response.status, body: await response.json() }
  }

  async post(path: string, body: unknown): Promise<Json> {
    const answer = await this.request('POST', path, body)
    if (answer.status !== 200) throw new Error(`POST ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`)
    return answer.body
  }

  /** Polls a command until it is SUCCESS or FAILED. */
  async waitForCommand(commandId: string, timeoutMs = 60_000): Promise<Json> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const { status, body } = await this.request('GET', `/commands/${commandId}`)
      if (status === 200 && (body.status === 'SUCCESS' || body.status === 'FAILED')) return body
      if (Date.now() > deadline) throw new Error(`command ${commandId} still ${body?.status} after ${timeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  /** Polls a file until it is STORED or FAILED. */
  async waitForFile(fileId: string, timeoutMs = 60_000): Promise<Json> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const { status, body } = await this.request('GET', `/files/${fileId}`)
      if (status === 200 && body.status !== 'PROCESSING') return body
      if (Date.now() > deadline) throw new Error(`file ${fileId} still ${body?.status} after ${timeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}
