import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { performance } from 'node:perf_hooks'
import { pinnedLookup, systemResolver, type Resolver } from '../../contracts/url-guard-fetch.js'
import { checkUrl, classifyAddress } from '../../contracts/url-guard.js'
import type { WebhookRequest } from './webhook-request.js'

/** How one POST ended. `status_code` is null when no HTTP answer arrived. */
export interface SendResult {
  outcome: 'success' | 'failure'
  status_code: number | null
  /** Why it failed, short and safe to show the account; null on success. */
  error: string | null
  duration_ms: number
}

/** What a deliverer sends with: WebhookSender, or a test's stand-in. */
export interface Sender {
  send(rawUrl: string, webhook: WebhookRequest): Promise<SendResult>
  /** Cuts sends in flight short (each ends as a failure) and frees the sockets. */
  close(): void
}

export interface WebhookSenderOptions {
  /** ALLOW_PRIVATE_NETWORKS: lets webhooks reach loopback and private networks (tests, local development). */
  allowPrivateNetworks: boolean
  /** The whole exchange up to the response's status line. */
  timeoutMs: number
  resolve?: Resolver
}

/**
 * POSTs webhooks under the private-network rule: the URL is checked, its host
 * name resolved inside the connection's own lookup (the socket connects to the
 * address that was checked) and the peer checked again on connect. Redirects
 * are not followed: a 3xx is a failed delivery, since following one would
 * send the signed body somewhere the account never configured.
 */
export class WebhookSender implements Sender {
  readonly #options: WebhookSenderOptions
  // Keep-alive: a receiver gets many deliveries; a socket was checked when it connected.
  // Idle sockets close after 4 s, before common servers' 5 s keep-alive timeouts do.
  readonly #http = new HttpAgent({ keepAlive: true, maxSockets: 64, timeout: 4_000 })
  readonly #https = new HttpsAgent({ keepAlive: true, maxSockets: 64, timeout: 4_000 })

  constructor(options: WebhookSenderOptions) {
    this.#options = options
  }

  async send(rawUrl: string, webhook: WebhookRequest): Promise<SendResult> {
    const started = performance.now()
    const first = await this.#sendOnce(rawUrl, webhook, started)
    // A kept-alive socket the receiver closed while idle resets before any answer: the
    // request never reached it, so one fresh connection is tried (Node's documented remedy).
    return first.staleSocket ? this.#sendOnce(rawUrl, webhook, started) : first
  }

  async #sendOnce(rawUrl: string, webhook: WebhookRequest, started: number): Promise<SendResult & { staleSocket?: boolean }> {
    const done = (status_code: number | null, error: string | null): SendResult => ({
      outcome: error === null ? 'success' : 'failure',
      status_code,
      error,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
    })
    const { allowPrivateNetworks, timeoutMs } = this.#options
    const verdict = checkUrl(rawUrl, { allowPrivateNetworks })
    if (!verdict.ok) return done(null, `refused: ${verdict.reason}`)
    const url = verdict.url
    const https = url.protocol === 'https:'
    return new Promise<SendResult & { staleSocket?: boolean }>((resolve) => {
      let settled = false
      const finish = (status: number | null, error: string | null, staleSocket = false) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(staleSocket ? { ...done(status, error), staleSocket } : done(status, error))
      }
      const req = (https ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        agent: https ? this.#https : this.#http,
        lookup: pinnedLookup(this.#options.resolve ?? systemResolver, { allowPrivateNetworks }),
        headers: { ...webhook.headers, 'Content-Length': String(Buffer.byteLength(webhook.body)) },
      })
      const timer = setTimeout(() => {
        finish(null, `timeout: no answer within ${timeoutMs} ms`)
        req.destroy()
      }, timeoutMs)
      req.on('socket', (socket) => {
        // A reused socket was checked when it first connected.
        if (!socket.connecting) return
        socket.once('connect', () => {
          const check = classifyAddress(socket.remoteAddress ?? '')
          if (!allowPrivateNetworks && check.forbidden) req.destroy(new Error(`refused: ${url.hostname}: ${check.reason}`))
        })
      })
      req.once('response', (response) => {
        // The body is not read for meaning; draining lets the socket be reused.
        response.resume()
        const status = response.statusCode ?? 0
        if (status >= 200 && status <= 299) finish(status, null)
        else if (status >= 300 && status <= 399) finish(status, `HTTP ${status}: redirects are not followed`)
        else finish(status, `HTTP ${status}`)
      })
      req.once('error', (error: Error & { code?: string }) => {
        if (req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) return finish(null, `connection failed: ${error.code}`, true)
        const reason = error.message.startsWith('refused:') ? error.message : error.name === 'UrlGuardError' ? `refused: ${error.message}` : `connection failed: ${error.code ?? error.message}`
        finish(null, reason)
      })
      req.end(webhook.body)
    })
  }

  close(): void {
    this.#http.destroy()
    this.#https.destroy()
  }
}
