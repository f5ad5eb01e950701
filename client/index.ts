/**
 * The typed ffkube client: openapi-fetch over the types openapi-typescript
 * generates from the served OpenAPI document (client/openapi.d.ts). Every
 * request and response type comes from that file; nothing here restates a
 * schema. Runs on Node 20+ and in browsers (it needs only fetch).
 *
 *   const api = createFfkubeClient({ baseUrl: 'http://127.0.0.1:8080', apiKey })
 *   const { command_id } = expectData(await api.POST('/api/v1/run-ffmpeg-command', { body }))
 */
import createClient, { type Client } from 'openapi-fetch'
import type { paths, webhooks } from './openapi.js'

export type { paths, webhooks } from './openapi.js'
export { ApiError, expectData } from './api-error.js'
export { uploadFile, waitForFile } from './files.js'
export { commandEvents, DEFAULT_IDLE_TIMEOUT_MS, StreamIdleError, type CommandEvent, type CommandEventsOptions } from './command-events.js'

/** The client: `api.GET(path, init)`, `api.POST(…)`, … typed by path and method, answering `{ data, error, response }`. */
export type FfkubeClient = Client<paths>

export interface FfkubeClientOptions {
  /** The service root, e.g. `http://127.0.0.1:8080` (paths carry `/api/v1`). A trailing slash is fine. */
  baseUrl: string
  /** Sent as X-API-KEY on every request; leave unset when `fetch` adds it (e.g. a console behind a proxy that does). */
  apiKey?: string
  /** A fetch of your own (tests, proxies); globalThis.fetch when unset. */
  fetch?: (input: Request) => Promise<Response>
}

/** A typed client for one service and key. */
export function createFfkubeClient(options: FfkubeClientOptions): FfkubeClient {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    ...(options.apiKey === undefined ? {} : { headers: { 'x-api-key': options.apiKey } }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  })
}

/** The JSON body of a path's method's response with `status`, as the generated types state it. */
export type ResponseBody<Path extends keyof paths, Method extends keyof paths[Path], Status extends number = 200> = paths[Path][Method] extends {
  responses: { [S in Status]: { content: { 'application/json': infer Body } } }
}
  ? Body
  : never

/** The JSON request body of a path's method. */
export type RequestBody<Path extends keyof paths, Method extends keyof paths[Path]> = paths[Path][Method] extends {
  requestBody?: { content: { 'application/json': infer Body } }
}
  ? Body
  : never

/** GET /api/v1/commands/{commandId}: the spec's CommandPollResponse. */
export type CommandPollResponse = ResponseBody<'/api/v1/commands/{commandId}', 'get'>
export type CommandStatus = CommandPollResponse['status']
/** One entry of a command's `output_files`. */
export type OutputFileMeta = NonNullable<CommandPollResponse['output_files']>[string]
/** GET /api/v1/commands/{commandId}/logs. */
export type CommandLog = ResponseBody<'/api/v1/commands/{commandId}/logs', 'get'>
/** GET /api/v1/files/{fileId}: the spec's StoredFileResponse. */
export type StoredFile = ResponseBody<'/api/v1/files/{fileId}', 'get'>
/** GET /api/v1/presets/{presetId}: the spec's PresetResponse. */
export type Preset = ResponseBody<'/api/v1/presets/{presetId}', 'get'>
/** GET /api/v1/webhook-config. */
export type WebhookConfig = ResponseBody<'/api/v1/webhook-config', 'get'>
/** GET /api/v1/usage: commands, seconds and managed storage by UTC day. */
export type Usage = ResponseBody<'/api/v1/usage', 'get'>
/** What the service shows of the account's yt-dlp cookies: count, domains and dates, never a cookie. */
export type YtdlpCookies = ResponseBody<'/api/v1/ytdlp-cookies', 'get'>
/** The body of a completion webhook (verify the raw bytes before you parse them: docs/api/webhooks.md). */
export type CompletionWebhook = webhooks['commandCompleted']['post']['requestBody']['content']['application/json']
/** The spec's ErrorResponse, `{ error, message }`, as every 4xx states it. */
export type ErrorResponse = ResponseBody<'/api/v1/commands/{commandId}', 'get', 404>
/** POST /api/v1/run-ffmpeg-command's body. */
export type RunFfmpegCommandBody = RequestBody<'/api/v1/run-ffmpeg-command', 'post'>
