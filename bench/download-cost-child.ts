/**
 * The child of bench/download-cost.ts, started with the runner's node flags:
 * for each line on stdin (a variant's name) it downloads BENCH_URL to
 * BENCH_OUT that way and answers one line `{"cpuMs", "wallMs"}`.
 */
import { createWriteStream } from 'node:fs'
import { request } from 'node:http'
import { createInterface } from 'node:readline'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { guardedDownload } from '../contracts/url-guard-fetch.js'

const url = process.env.BENCH_URL as string
const out = process.env.BENCH_OUT as string

/** guardedDownload's pipeline as it was, with the streams' default marks. */
async function defaultBuffers(): Promise<void> {
  const response = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => request(url, { agent: false }, resolve).on('error', reject).end())
  let bytes = 0
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length
      callback(null, chunk)
    },
  })
  await pipeline(response, counter, createWriteStream(out))
  if (bytes === 0) throw new Error('nothing was downloaded')
}

for await (const variant of createInterface({ input: process.stdin })) {
  const cpu = process.cpuUsage()
  const started = performance.now()
  if (variant === 'guarded') await guardedDownload(url, out, { maxBytes: 10e9, timeoutMs: 600_000, allowPrivateNetworks: true })
  else await defaultBuffers()
  const used = process.cpuUsage(cpu)
  process.stdout.write(`${JSON.stringify({ cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - started })}\n`)
}
