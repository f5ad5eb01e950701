/**
 * How the API benches load a server over loopback HTTP with keep-alive: an
 * open loop at a fixed rate (latency counted from the intended send time, so
 * queueing counts, as a client's clock sees it) and a closed loop of N
 * clients for the maximum rate. Used by api-submit.ts and api-burst.ts.
 */
import { Agent, request } from 'node:http'

export interface Phase {
  p50: number
  p99: number
  max: number
  rps: number
  errors: number
  /** Not sent: the open loop's cap on requests in flight was reached (the server fell behind). */
  dropped: number
  count: number
}

/** An answer's status and body. */
export interface Answer {
  status: number
  body: string
}

/** One keep-alive agent per bench process, destroyed at its end. */
export const agent = new Agent({ keepAlive: true, maxSockets: 128 })

/** A request to 127.0.0.1:`port` with the API key, and `body` as JSON when given. */
export function send(port: number, apiKey: string, method: 'GET' | 'POST', path: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'x-api-key': apiKey }
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

export function summarise(latencies: number[], errors: number, elapsedMs: number, dropped = 0): Phase {
  const sorted = [...latencies].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? NaN, rps: (latencies.length / elapsedMs) * 1000, errors, dropped, count: latencies.length }
}

/** Requests in flight past which the open loop stops sending rather than queue without bound. */
const MAX_IN_FLIGHT = 512

/**
 * Open loop: `total` calls at `rate` per second; latency counts from the
 * intended send time. `call(i)` makes the i-th request; a non-200 answer or a
 * connection error counts as an error.
 */
export async function fixedRate(rate: number, total: number, call: (i: number) => Promise<{ status: number }>): Promise<Phase> {
  const latencies: number[] = []
  let errors = 0
  let dropped = 0
  let inFlight = 0
  const pending: Promise<void>[] = []
  const start = performance.now()
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 1) await new Promise((r) => setTimeout(r, wait))
    if (inFlight >= MAX_IN_FLIGHT) {
      dropped += 1 // the server fell too far behind: not sent, rather than queued without bound
      continue
    }
    inFlight += 1
    // From the intended time when sent late (queueing counts), from the send when a timer fired early.
    const origin = Math.min(due, performance.now())
    pending.push(
      call(i)
        .then((res) => {
          if (res.status === 200) latencies.push(performance.now() - origin)
          else errors += 1
        })
        .catch(() => void (errors += 1))
        .finally(() => void (inFlight -= 1)),
    )
  }
  await Promise.all(pending)
  return summarise(latencies, errors, performance.now() - start, dropped)
}

/** Closed loop: `concurrency` clients send back to back for `seconds`. */
export async function saturate(concurrency: number, seconds: number, call: () => Promise<{ status: number }>): Promise<Phase> {
  const latencies: number[] = []
  let errors = 0
  const start = performance.now()
  const end = start + seconds * 1000
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const sent = performance.now()
        try {
          const res = await call()
          if (res.status === 200) latencies.push(performance.now() - sent)
          else errors += 1
        } catch {
          errors += 1
        }
      }
    }),
  )
  return summarise(latencies, errors, performance.now() - start)
}
