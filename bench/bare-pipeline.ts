/**
 * The work a command must do outside ffkube's own code, done bare: the
 * baseline that moves the same bytes as the service. A remux command is not
 * only ffmpeg and ffprobe: its input comes over HTTP and its output goes to
 * S3. Here a script-like pipeline does just that, with no service, store,
 * queue, runner or jail:
 *
 *   curl GET the input into a fresh directory, ffmpeg, then ffprobe of the
 *   output beside a curl PUT of it to the same S3 server (a presigned URL), as
 *   the runner probes beside its upload.
 *
 * curl, not node, moves the bytes: the cheapest common client. Its figures
 * sit beside the tools-alone ones in bench/local-mode.ts: the gap between
 * tools alone and this is what moving 2 × the clip through HTTP costs on this
 * machine whoever does it (the input server's share included, as in the
 * service's run); the gap between this and the service is ffkube's own.
 */
import { execFile } from 'node:child_process'
import { mkdir, rm } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { probeArgs } from '../contracts/media-probe.js'
import type { TestS3 } from '../test/harness/s3.js'

const run = promisify(execFile)

export interface BarePipeline {
  /** One command's work, start to end, in ms. */
  once(args: readonly string[], outName: string): Promise<number>
  /** Remux commands/s with one pipeline loop per core, nothing else running. */
  ceiling(commands: number): Promise<number>
  close(): void
}

export function barePipeline(dir: string, inputUrl: string, s3: TestS3, tools: { ffmpeg: string; ffprobe: string }): BarePipeline {
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  })
  let sequence = 0

  async function once(args: readonly string[], outName: string): Promise<number> {
    const work = join(dir, `bare-${(sequence += 1)}`)
    const key = `bare-pipeline/${sequence}/${outName}`
    // Signed before the clock starts: a script would be handed the URL.
    const putUrl = await getSignedUrl(client, new PutObjectCommand({ Bucket: s3.bucket, Key: key }), { expiresIn: 600 })
    await mkdir(work)
    const started = performance.now()
    await run('curl', ['--silent', '--show-error', '--fail', '--output', join(work, 'in.mp4'), inputUrl])
    await run(tools.ffmpeg, ['-y', '-nostdin', '-loglevel', 'error', '-i', 'in.mp4', ...args, outName], { cwd: work })
    await Promise.all([
      run(tools.ffprobe, probeArgs(outName), { cwd: work }),
      // No "Expect: 100-continue": it costs a round trip the SDK does not make either.
      run('curl', ['--silent', '--show-error', '--fail', '--header', 'Expect:', '--upload-file', join(work, outName), putUrl]),
    ])
    const ms = performance.now() - started
    await rm(work, { recursive: true, force: true })
    return ms
  }

  async function ceiling(commands: number): Promise<number> {
    const loops = availableParallelism()
    const started = performance.now()
    await Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        for (let i = loop; i < commands; i += loops) await once(['-c', 'copy'], 'remux.mp4')
      }),
    )
    return commands / ((performance.now() - started) / 1000)
  }

  return { once, ceiling, close: () => client.destroy() }
}
