/** The real jail on this host: what a tool in it sees, the limits it gets, a probe through it, and the fallback. */
import { copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { Writable } from 'node:stream'
import { join } from 'node:path'
import { pino } from 'pino'
import t from 'tap'
import { detectSandbox, toolFolders, toolsReadOnly } from '../../api/executors/sandbox-host.js'
import { toolPath } from '../../api/local/tools.js'
import { DEFAULT_TOOL_LIMITS, type SandboxHost } from '../../contracts/sandbox.js'
import { runTool } from '../../contracts/tool-process.js'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'

/** A logger whose lines the test can read. */
function capturingLogger(): { logger: pino.Logger; lines: () => string } {
  let text = ''
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString()
      done()
    },
  })
  return { logger: pino({ level: 'info' }, sink), lines: () => text }
}

const ffmpeg = toolPath('ffmpeg')
const ffprobe = toolPath('ffprobe')

t.test('this host runs bubblewrap (scripts/provision.sh installs it)', async (t) => {
  const { logger, lines } = capturingLogger()
  const detected = detectSandbox(toolFolders([ffmpeg, ffprobe]), logger)
  t.equal(detected.level, 'bwrap', detected.reason ?? '')
  t.equal(lines(), '', 'no warning')
})

t.test('a host without bwrap falls back to the limits alone, with a warning that says what that means', async (t) => {
  const { logger, lines } = capturingLogger()
  const detected = detectSandbox([], logger, { PATH: '/nonexistent' })
  t.match(detected, { level: 'limits-only', host: { bwrap: null }, reason: /bwrap is not installed/ })
  const warning = JSON.parse(lines()) as { level: number; msg: string; sandbox: string }
  t.equal(warning.level, 40, 'logged at warn')
  t.match(warning, { sandbox: 'limits-only', msg: /SANDBOX DEGRADED/ })
})

t.test('no read-only folder of the tools holds the data dir', async (t) => {
  const dir = await scratchDir(t)
  const python = join(dir, 'bin', 'python3')
  await mkdir(join(dir, 'bin'))
  await writeFile(python, '#!/bin/sh\n', { mode: 0o755 })
  const env = { PATH: `${join(dir, 'bin')}:/usr/bin`, FFKUBE_CACHE: join(dir, 'no-cache') }
  t.ok(toolsReadOnly([], [], { env }).includes(dir), 'a python3 in <dir>/bin makes <dir> its root')
  t.notOk(toolsReadOnly([], [], { env, dataDir: join(dir, 'data') }).includes(dir), 'unless the data dir is inside it')
})

t.test('in the jail', async (t) => {
  const { logger } = capturingLogger()
  const detected = detectSandbox(toolFolders([ffmpeg, ffprobe]), logger)
  const host = detected.host as SandboxHost
  const dir = await scratchDir(t)
  const workDir = join(dir, 'work')
  await mkdir(workDir)
  await writeFile(join(dir, 'beside.txt'), 'not for the tool')
  const jail = (network: 'none' | 'host' = 'none', limits = host.limits) => ({ host: { ...host, limits }, network })

  t.test('a tool sees its work dir, not the folder around it, and its /proc holds only its own processes', async (t) => {
    const run = await runTool('/bin/sh', ['-c', 'echo hi > mine.txt && cat mine.txt && ls /proc | grep -c "^[0-9]" && cat ../beside.txt'], { cwd: workDir, timeoutMs: 10_000, sandbox: jail() })
    const [written, processes] = run.stdout.trim().split('\n')
    t.equal(written, 'hi')
    t.ok(Number(processes) <= 4, `bwrap's init, sh, ls, grep at most: ${processes}`)
    t.not(run.code, 0)
    t.match(run.stderr, /beside\.txt: No such file or directory/)
  })

  t.test('the system is read-only', async (t) => {
    const run = await runTool('/bin/sh', ['-c', 'touch /usr/x'], { cwd: workDir, timeoutMs: 10_000, sandbox: jail() })
    t.not(run.code, 0)
    t.match(run.stderr, /Read-only file system/)
  })

  t.test('a deadline ends the jailed tool and everything it started', async (t) => {
    const run = await runTool('/bin/sh', ['-c', 'sleep 987 & sleep 986'], { cwd: workDir, timeoutMs: 300, sandbox: jail() })
    t.ok(run.timedOut)
    // The run ends when its output pipes close, i.e. when the last process holding them, the background sleep too, is gone.
    const left: string[] = []
    for (const entry of await readdir('/proc')) {
      const argv = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
      if (argv === 'sleep\u0000987\u0000' || argv === 'sleep\u0000986\u0000') left.push(entry)
    }
    t.same(left, [], 'no sleep is left')
  })

  t.test('the seccomp filter refuses what a media tool never needs, with EPERM, and lets the rest through', async (t) => {
    // Python's ctypes makes raw system calls: keyctl, ptrace, bpf, io_uring_setup, unshare, then getpid.
    const script = 'import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nfor nr in (250, 101, 321, 425, 272, 39):\n    r = libc.syscall(nr, 0, 0, 0, 0)\n    print(nr, r if r >= 0 else -ctypes.get_errno())\n'
    const run = await runTool('/usr/bin/python3', ['-c', script], { cwd: workDir, timeoutMs: 10_000, sandbox: jail() })
    t.equal(run.code, 0, run.stderr)
    const results = Object.fromEntries(run.stdout.trim().split('\n').map((line) => line.split(' ').map(Number) as [number, number]))
    for (const nr of [250, 101, 321, 425, 272]) t.equal(results[nr], -1, `system call ${nr} is refused with EPERM`)
    t.ok((results[39] ?? 0) > 0, 'getpid answers')
  })

  t.test('RLIMIT_FSIZE stops a file at the limit', async (t) => {
    const limits = { ...DEFAULT_TOOL_LIMITS, fileBytes: 100_000 }
    const run = await runTool(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'anoisesrc=d=10', '-f', 'wav', '-y', 'big.wav'], { cwd: workDir, timeoutMs: 30_000, sandbox: jail('none', limits) })
    t.not(run.code, 0, 'ffmpeg did not finish its 10 s of noise (~880 kB)')
    const { size } = await stat(join(workDir, 'big.wav'))
    t.ok(size <= 100_000, `the file stopped at ${size} bytes`)
  })

  t.test('a jailed ffprobe probes a file in the work dir', async (t) => {
    const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
    await copyFile(clip, join(workDir, 'a.mp4'))
    const run = await runTool(ffprobe, ['-v', 'error', '-show_format', '-of', 'json', 'a.mp4'], { cwd: workDir, timeoutMs: 10_000, sandbox: jail() })
    t.equal(run.code, 0, run.stderr)
    t.match(JSON.parse(run.stdout), { format: { format_name: /mp4/ } })
  })
})
