import { copyFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { resolveStartGate } from '../../api/executors/tool-paths.js'
import { toolPath } from '../../api/local/tools.js'
import { startGatedTool } from '../../contracts/tool-process.js'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import { probeFile, startProbe } from '../../runner-image/runner/run/probes.js'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'

const alive = (pid: number | undefined) => {
  try {
    process.kill(pid ?? -1, 0)
    return true
  } catch {
    return false
  }
}

t.test('the start gate holds ffprobe until its file is written', async (t) => {
  const gate = resolveStartGate()
  t.ok(gate, 'npm test builds the gate (scripts/provision.sh)')
  if (!gate) return
  const dir = await scratchDir(t)
  await mkdir(join(dir, 'outputs'))
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240, fps: 10 })
  const ffprobe = toolPath('ffprobe')

  t.test('a probe started before its file exists reports what an ordinary probe does', async (t) => {
    const pending = startProbe(ffprobe, dir, 'outputs/a.mp4', gate)
    await delay(400)
    // ffmpeg "writes" the output only now; an ungated ffprobe would have failed on the missing file long ago.
    await copyFile(clip, join(dir, 'outputs', 'a.mp4'))
    const gated = await pending.result()
    t.same(gated, await probeFile(ffprobe, dir, 'outputs/a.mp4'))
    t.match(gated, { width: 320, height: 240, codec: 'h264', file_type: 'video' })
  })

  t.test('the held tool waits, alive, and runs once opened', async (t) => {
    const held = startGatedTool(ffprobe, ['-v', 'error', '-show_format', '-of', 'json', 'outputs/b.mp4'], { cwd: dir, timeoutMs: 10_000, gateLibrary: gate })
    await delay(400)
    t.ok(alive(held.pid), 'still waiting at the gate')
    await copyFile(clip, join(dir, 'outputs', 'b.mp4'))
    const run = await held.open()
    t.equal(run?.code, 0, run?.stderr ?? 'no run')
    t.match(JSON.parse(run?.stdout ?? '{}'), { format: { format_name: /mp4/ } })
  })

  t.test('a cancelled probe leaves no process behind', async (t) => {
    const pending = startGatedTool(ffprobe, ['-v', 'error', 'outputs/never.mp4'], { cwd: dir, timeoutMs: 10_000, gateLibrary: gate })
    await delay(200)
    pending.cancel()
    await eventually('the cancelled probe gone', () => !alive(pending.pid))
    t.pass('no process left behind')
  })

  t.test('a file ffmpeg never wrote is OUTPUT_MISSING, and its held ffprobe is ended', async (t) => {
    const pending = startProbe(ffprobe, dir, 'outputs/missing.mp4', gate)
    const error = await pending.result().catch((e: unknown) => e)
    t.ok(error instanceof RunnerFailure && error.errorStatus === 'OUTPUT_MISSING')
  })

  t.test('a gate library that does not load falls back to an ordinary probe', async (t) => {
    const pending = startProbe(ffprobe, dir, 'outputs/c.mp4', join(dir, 'no-such-gate.so'))
    await delay(400)
    await copyFile(clip, join(dir, 'outputs', 'c.mp4'))
    t.match(await pending.result(), { width: 320, height: 240 }, 'not the early, unheld run that found no file')
  })
})
