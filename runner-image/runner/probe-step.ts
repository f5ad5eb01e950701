/** Step 3: probes each output with ffprobe (same sandbox rules as ffmpeg). */
import { stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { INPUT_HARDENING } from '../../contracts/ffmpeg-policy.js'
import { mediaMetaFromProbe, type FfprobeOutput, type MediaMeta } from '../../contracts/output-file-meta.js'
import { runTool } from './child-process.js'
import { RunnerFailure } from './failure.js'

export async function probeFile(ffprobePath: string, workDir: string, relativePath: string, timeoutMs = 30_000): Promise<MediaMeta> {
  let size: number
  try {
    size = (await stat(join(workDir, relativePath))).size
  } catch {
    throw new RunnerFailure('OUTPUT_MISSING', `ffmpeg did not write ${basename(relativePath)}`)
  }
  const run = await runTool(
    ffprobePath,
    // The same input hardening as ffmpeg's: an output's bytes are the user's to choose.
    ['-v', 'error', ...INPUT_HARDENING, '-show_format', '-show_streams', '-of', 'json', relativePath],
    { cwd: workDir, timeoutMs },
  )
  let probe: FfprobeOutput = {}
  if (run.code === 0) {
    try {
      probe = JSON.parse(run.stdout) as FfprobeOutput
    } catch {
      // An unreadable probe leaves the media fields null; the file itself is still delivered.
    }
  }
  return mediaMetaFromProbe(probe, basename(relativePath), size)
}
