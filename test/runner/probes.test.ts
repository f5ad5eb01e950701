import { copyFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import type { CollectedOutput } from '../../runner-image/runner/produced-files.js'
import { probeFile, probeOutputs } from '../../runner-image/runner/run/probes.js'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'

/** A single-file output as collectOutputs finds it. */
function single(alias: string, filename: string): CollectedOutput {
  const path = `outputs/${filename}`
  return { file: { alias, filename, path, main: null }, members: null, mainPath: path, mainName: filename }
}

t.test('the run phase probes what ffmpeg wrote', async (t) => {
  const dir = await scratchDir(t)
  await mkdir(join(dir, 'outputs'))
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240, fps: 10 })
  const ffprobe = toolPath('ffprobe')

  t.test('every file to deliver is probed, keyed by its alias', async (t) => {
    await copyFile(clip, join(dir, 'outputs', 'a.mp4'))
    await copyFile(clip, join(dir, 'outputs', 'b.mp4'))
    const files = [single('out_a', 'a.mp4'), single('out_b', 'b.mp4')]
    const metas = await probeOutputs(files, { workDir: dir, ffprobePath: ffprobe, sandbox: null })
    t.same(Object.keys(metas), ['out_a', 'out_b'])
    t.match(metas.out_a, { width: 320, height: 240, codec: 'h264', file_type: 'video' })
    t.same(metas.out_b, await probeFile(ffprobe, dir, 'outputs/b.mp4'), 'each as an ordinary probe reads it')
  })

  t.test('a file ffmpeg never wrote is OUTPUT_MISSING', async (t) => {
    const error = await probeOutputs([single('out_x', 'missing.mp4')], { workDir: dir, ffprobePath: ffprobe, sandbox: null }).catch((e: unknown) => e)
    t.ok(error instanceof RunnerFailure && error.errorStatus === 'OUTPUT_MISSING')
  })
})
