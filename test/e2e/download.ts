import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { toolPath } from '../../api/local/tools.js'

const run = promisify(execFile)

/** Downloads a storage_url to `dir` and returns what ffprobe reads from it. */
export async function downloadAndProbe(url: string, dir: string, name: string): Promise<{ bytes: number; sha256: string; format: string; width: number | null; height: number | null; codec: string | null }> {
  const response = await fetch(url)
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}`)
  const data = Buffer.from(await response.arrayBuffer())
  const path = join(dir, name)
  await writeFile(path, data)
  const { stdout } = await run(toolPath('ffprobe'), ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', path])
  const probe = JSON.parse(stdout) as { format: { format_name: string }; streams: Array<{ codec_type: string; codec_name: string; width?: number; height?: number }> }
  const primary = probe.streams.find((s) => s.codec_type === 'video') ?? probe.streams[0]
  return { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex'), format: probe.format.format_name, width: primary?.width ?? null, height: primary?.height ?? null, codec: primary?.codec_name ?? null }
}
