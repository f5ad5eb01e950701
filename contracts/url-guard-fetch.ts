/**
 * Fetches a user-supplied URL under the private-network rule. The address a
 * host name resolves to is checked inside the connection's own `lookup`, so
 * the socket connects to exactly the address that was checked (no window for
 * DNS rebinding between a check and a connect). Redirects are followed by
 * hand, each hop checked again; size and time are bounded.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { checkUrl, classifyAddress, type UrlGuardOptions } from './url-guard.js'

/** Why a guarded fetch failed; the runner prefixes these with INPUT_. */
export type FetchFailureCode =
  | 'INVALID_URL'
  | 'FORBIDDEN_ADDRESS'
  | 'UNREACHABLE'
  | 'TOO_LARGE'
  | 'TIMEOUT'
  | 'HTTP_STATUS'
  | 'TOO_MANY_REDIRECTS'

export class UrlGuardError extends Error {
  override readonly name = 'UrlGuardError'
  constructor(readonly code: FetchFailureCode, message: string, readonly httpStatus: number | null = null) {
    super(message)
  }
}

/** Resolves a host name to IP addresses; injectable so tests can play a hostile DNS. */
export type Resolver = (host: string) => Promise<string[]>

export const systemResolver: Resolver = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((entry) => entry.address)

export interface GuardedFetchOptions extends UrlGuardOptions {
  maxBytes: number
  /** Whole fetch, redirects included. */
  timeoutMs: number
  maxRedirects?: number
  resolve?: Resolver
  userAgent?: string
}

export interface FetchedFile {
  finalUrl: string
  bytes: number
  contentType: string | null
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/**
 * What a download may hold between the socket and the file. With the streams'
 * 16 KiB default every 64 KiB socket read was over the mark, so the pipeline
 * paused and resumed the response once per read and wrote each read on its
 * own; with 1 MiB the reads that gather while a write is in flight go out
 * together (one writev). A 60 MB input cost the runner (lite mode) ~220–280 ms
 * of CPU before, ~140 ms after (2026-11-27, docs/benchmarks/multi-file.md).
 */
const DOWNLOAD_BUFFER_BYTES = 1024 * 1024

/** Downloads `url` into `path` (created or replaced); removes the partial file on failure. */
export async function guardedDownload(url: string, path: string, options: GuardedFetchOptions): Promise<FetchedFile> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), options.timeoutMs)
  try {
    const { response, finalUrl } = await openFollowingRedirects(url, options, controller.signal)
    const declared = Number(response.headers['content-length'])
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      response.destroy()
      throw tooLarge(options.maxBytes)
    }
    let bytes = 0
    const counter = new Transform({
      readableHighWaterMark: DOWNLOAD_BUFFER_BYTES,
      writableHighWaterMark: DOWNLOAD_BUFFER_BYTES,
      transform(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length
        callback(bytes > options.maxBytes ? tooLarge(options.maxBytes) : null, chunk)
      },
    })
    await pipeline(response, counter, createWriteStream(path, { highWaterMark: DOWNLOAD_BUFFER_BYTES }), { signal: controller.signal })
    return { finalUrl, bytes, contentType: response.headers['content-type'] ?? null }
  } catch (error) {
    await rm(path, { force: true })
    if (controller.signal.aborted) throw new UrlGuardError('TIMEOUT', `${url}: no complete answer within ${options.timeoutMs} ms`)
    throw error
  } finally {
    clearTimeout(timer)
  }
}

function tooLarge(maxBytes: number): UrlGuardError {
  return new UrlGuardError('TOO_LARGE', `the file is larger than the limit of ${maxBytes} bytes`)
}

/** Opens `url`, following up to `maxRedirects` redirects, each one checked like the first. */
export async function openFollowingRedirects(
  url: string,
  options: GuardedFetchOptions,
  signal: AbortSignal,
): Promise<{ response: IncomingMessage; finalUrl: string }> {
  const maxRedirects = options.maxRedirects ?? 5
  let current = url
  for (let hop = 0; ; hop++) {
    const response = await openOnce(current, options, signal)
    const status = response.statusCode ?? 0
    if (REDIRECTS.has(status)) {
      response.resume()
      const location = response.headers.location
      if (!location) throw new UrlGuardError('HTTP_STATUS', `${current} answered ${status} without a Location`, status)
      if (hop >= maxRedirects) throw new UrlGuardError('TOO_MANY_REDIRECTS', `${url}: more than ${maxRedirects} redirects`)
      current = new URL(location, current).toString()
      continue
    }
    if (status < 200 || status > 299) {
      response.resume()
      throw new UrlGuardError('HTTP_STATUS', `${current} answered HTTP ${status}`, status)
    }
    return { response, finalUrl: current }
  }
}

/** One request, no redirects: checked URL, pinned address. */
async function openOnce(raw: string, options: GuardedFetchOptions, signal: AbortSignal): Promise<IncomingMessage> {
  const verdict = checkUrl(raw, options)
  if (!verdict.ok) throw new UrlGuardError(verdict.code, verdict.reason)
  const { url } = verdict
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, {
      method: 'GET',
      agent: false,
      signal,
      lookup: pinnedLookup(options.resolve ?? systemResolver, options),
      headers: { 'user-agent': options.userAgent ?? 'ffkube-fetch/1.0', accept: '*/*' },
    })
    req.on('socket', (socket) => {
      // Belt and braces: whatever path led here, the peer must be an allowed address.
      socket.once('connect', () => {
        const peer = socket.remoteAddress ?? ''
        const check = (options.classify ?? classifyAddress)(peer)
        if (!options.allowPrivateNetworks && check.forbidden) {
          req.destroy(new UrlGuardError('FORBIDDEN_ADDRESS', `${url.host}: ${check.reason}`))
        }
      })
    })
    req.once('response', resolve)
    req.once('error', (error) => reject(asGuardError(error, url)))
    req.end()
  })
}

function asGuardError(error: unknown, url: URL): unknown {
  if (error instanceof UrlGuardError) return error
  if (error instanceof Error && error.name === 'AbortError') return error
  const message = error instanceof Error ? error.message : String(error)
  return new UrlGuardError('UNREACHABLE', `${url.host}: ${message}`)
}

/**
 * A `lookup` for http.request that resolves through `resolve` and refuses when
 * any resolved address is forbidden: a name that also points inside the
 * network is not one we want to half-trust.
 */
export function pinnedLookup(resolve: Resolver, options: UrlGuardOptions): LookupFunction {
  const classify = options.classify ?? classifyAddress
  return (hostname, lookupOptions, callback) => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) return callback(new UrlGuardError('UNREACHABLE', `${hostname} has no address`), '', 4)
        if (!options.allowPrivateNetworks) {
          for (const address of addresses) {
            const verdict = classify(address)
            if (verdict.forbidden) {
              return callback(new UrlGuardError('FORBIDDEN_ADDRESS', `${hostname} resolves to ${verdict.reason}`), '', 4)
            }
          }
        }
        const entries = addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }))
        const first = entries[0] as { address: string; family: number }
        if (lookupOptions.all) return callback(null, entries)
        return callback(null, first.address, first.family)
      },
      (error: unknown) => callback(new UrlGuardError('UNREACHABLE', `${hostname} does not resolve: ${String(error)}`), '', 4),
    )
  }
}

/**
 * Checks a URL that another program will fetch (yt-dlp): scheme, literal host,
 * and every address its host name resolves to now. Weaker than a pinned
 * connection — the program resolves again and follows its own redirects — so
 * callers state that residual risk.
 */
export async function assertUrlAllowed(raw: string, options: UrlGuardOptions & { resolve?: Resolver }): Promise<void> {
  const verdict = checkUrl(raw, options)
  if (!verdict.ok) throw new UrlGuardError(verdict.code, verdict.reason)
  if (options.allowPrivateNetworks || verdict.literalAddress !== null) return
  let addresses: string[]
  try {
    addresses = await (options.resolve ?? systemResolver)(verdict.host)
  } catch (error) {
    throw new UrlGuardError('UNREACHABLE', `${verdict.host} does not resolve: ${String(error)}`)
  }
  for (const address of addresses) {
    const check = (options.classify ?? classifyAddress)(address)
    if (check.forbidden) throw new UrlGuardError('FORBIDDEN_ADDRESS', `${verdict.host} resolves to ${check.reason}`)
  }
}
