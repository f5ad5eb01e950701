/**
 * What the runner's S3 client leaves out of every request. A multi-file
 * output is hundreds of PUTs made beside ffmpeg, and on two cores each CPU
 * millisecond the runner spends on one is taken from the encode
 * (docs/benchmarks/multi-file.md, bench/object-put-cost.ts). The runner runs
 * in lite mode (no optimising compiler), where the SDK's per-request
 * JavaScript is most of a small object's cost. The PUTs of bytes in memory
 * now go around the SDK's client altogether (lean-put.ts); this trims the
 * requests it still sends (streamed PUTs, multipart, deletes) and those PUTs
 * when a store has no lean PUT (no credentials in hand).
 */
import type { S3Client } from '@aws-sdk/client-s3'

/** The SDK's name for its logging middleware (@aws-sdk/core `loggerMiddlewareOptions`). */
export const SDK_LOGGER_MIDDLEWARE = 'loggerMiddleware'

/**
 * - No SDK logging: its middleware builds each request's log record (walking
 *   the operation's schema to mask sensitive members) before it asks whether
 *   a logger is there, and the runner gives the SDK none. It was ~0.5 ms of
 *   a PUT's ~4 ms in the runner's profile.
 * - A body already in memory that carries a CRC32 (`x-amz-checksum-crc32`,
 *   which the store checks and refuses the object on a mismatch) is signed as
 *   `UNSIGNED-PAYLOAD` rather than over a SHA-256 of the body: the same
 *   integrity the SDK itself chooses for a streamed body
 *   (STREAMING-UNSIGNED-PAYLOAD-TRAILER with a CRC32 trailer), without hashing
 *   every byte twice. The checksum header is signed, so it cannot be dropped
 *   on the way; TLS guards the bytes of an https endpoint as it does for any
 *   streamed upload. A body without a checksum keeps its SHA-256.
 * Returns whether the logging middleware was there to remove (an SDK upgrade
 * that renames it shows up in test/runner/lean-requests.test.ts).
 */
export function leanRequests(client: S3Client): boolean {
  const removed = client.middlewareStack.remove(SDK_LOGGER_MIDDLEWARE)
  client.middlewareStack.add(
    (next) => (args) => {
      const request = args.request as { headers?: Record<string, string>; body?: unknown }
      if (request.headers && request.body instanceof Uint8Array && Object.keys(request.headers).some((name) => name.toLowerCase().startsWith('x-amz-checksum-'))) {
        request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD'
      }
      return next(args)
    },
    // After the build step's checksum middleware has set the header (it runs at normal priority), before signing.
    { step: 'build', priority: 'low', name: 'ffkubeUnsignedChecksummedPayload' },
  )
  return removed
}
