import t, { type Test } from 'tap'
import { DEFAULT_TOOL_LIMITS, parseSandboxHost, sandboxedArgv, type SandboxHost, type SandboxRun } from '../../contracts/sandbox.js'

const host: SandboxHost = { bwrap: '/usr/bin/bwrap', readOnly: ['/opt/tools'], limits: { fileBytes: 1000, openFiles: 64, coreBytes: 0 } }
const run: SandboxRun = { workDir: '/data/work/c-1', network: 'none' }

/** The value after each occurrence of `option` (one word, or `width` words). */
function after(argv: readonly string[], option: string, width = 1): string[][] {
  return argv.flatMap((word, i) => (word === option ? [argv.slice(i + 1, i + 1 + width)] : []))
}

t.test('the bwrap argv', async (t) => {
  const argv = sandboxedArgv(host, run, 'ffmpeg', ['-i', 'inputs/in_v.mp4', 'outputs/x.mp4'])
  const bwrapAt = argv.indexOf('/usr/bin/bwrap')

  const cases: Array<[string, (t: Test) => void]> = [
    ['starts with prlimit lowering the file size, open files and core limits, then execs bwrap', (t) => {
      t.same(argv.slice(0, bwrapAt), ['/usr/bin/prlimit', '--fsize=1000', '--nofile=64', '--core=0', '--'])
    }],
    ['ends with the tool and its arguments, untouched, after --', (t) => {
      t.same(argv.slice(-4), ['ffmpeg', '-i', 'inputs/in_v.mp4', 'outputs/x.mp4'])
      t.equal(argv[argv.length - 5], '--')
    }],
    ['unshares every namespace and keeps no network', (t) => {
      t.ok(argv.includes('--unshare-all'))
      t.notOk(argv.includes('--share-net'))
    }],
    ['runs as nobody in its own user namespace, which cannot make more of them', (t) => {
      t.same(after(argv, '--uid'), [['65534']])
      t.same(after(argv, '--gid'), [['65534']])
      t.ok(argv.includes('--unshare-user'))
      t.ok(argv.includes('--disable-userns'))
    }],
    ['drops every capability, dies with its parent and has no terminal to inject into', (t) => {
      t.same(after(argv, '--cap-drop'), [['ALL']])
      t.ok(argv.includes('--die-with-parent'))
      t.ok(argv.includes('--new-session'))
    }],
    ['binds the work dir alone writable, at its own path, and starts there', (t) => {
      t.same(after(argv, '--bind', 2), [['/data/work/c-1', '/data/work/c-1']])
      t.same(after(argv, '--chdir'), [['/data/work/c-1']])
    }],
    ['binds the system and the tools read-only, never / , /root, /home or /var', (t) => {
      const readOnly = [...after(argv, '--ro-bind-try', 2), ...after(argv, '--ro-bind', 2)].map(([source]) => source as string)
      t.ok(readOnly.includes('/usr'))
      t.ok(readOnly.includes('/opt/tools'))
      for (const forbidden of ['/', '/root', '/home', '/var', '/etc', '/run']) t.notOk(readOnly.includes(forbidden), forbidden)
    }],
    ['mounts its own /proc (its pid namespace only), /dev and an empty /tmp before the read-only paths', (t) => {
      t.same(after(argv, '--proc'), [['/proc']])
      t.same(after(argv, '--dev'), [['/dev']])
      t.ok(argv.indexOf('--tmpfs') < argv.indexOf('--ro-bind-try'), 'a read-only path under /tmp stays visible')
    }],
  ]
  for (const [name, check] of cases) t.test(name, async (t) => check(t))
})

t.test('a seccomp filter is read from the descriptor the caller names, and only then', async (t) => {
  t.same(after(sandboxedArgv(host, { ...run, seccompFd: 4 }, 'ffprobe', []), '--seccomp'), [['4']])
  t.same(after(sandboxedArgv(host, run, 'ffprobe', []), '--seccomp'), [])
})

t.test('yt-dlp keeps the host network; everything else stays', async (t) => {
  const argv = sandboxedArgv(host, { ...run, network: 'host' }, 'yt-dlp', ['--', 'https://a.example/v'])
  t.ok(argv.includes('--unshare-all'))
  t.ok(argv.includes('--share-net'))
  t.same(after(argv, '--bind', 2), [['/data/work/c-1', '/data/work/c-1']])
})

t.test("yt-dlp's cookie directory is bound beside the work dir only when named, after the /tmp tmpfs", async (t) => {
  const argv = sandboxedArgv(host, { ...run, network: 'host', binds: ['/tmp/data/runner/ytdlp-cookies/c-1'] }, 'yt-dlp', ['--', 'https://a.example/v'])
  t.same(after(argv, '--bind', 2), [['/tmp/data/runner/ytdlp-cookies/c-1', '/tmp/data/runner/ytdlp-cookies/c-1'], ['/data/work/c-1', '/data/work/c-1']])
  t.ok(argv.indexOf('--tmpfs') < argv.indexOf('/tmp/data/runner/ytdlp-cookies/c-1'), 'a directory under /tmp is not hidden by the tmpfs')
})

t.test('without bwrap, the limits still apply', async (t) => {
  const bare = { ...host, bwrap: null }
  t.same(sandboxedArgv(bare, run, 'ffmpeg', ['-version']), ['/usr/bin/prlimit', '--fsize=1000', '--nofile=64', '--core=0', '--', 'ffmpeg', '-version'])
})

t.test('FFKUBE_SANDBOX carries a host as JSON', async (t) => {
  t.same(parseSandboxHost(JSON.stringify(host)), host)
  t.same(parseSandboxHost(JSON.stringify({ ...host, bwrap: null })), { ...host, bwrap: null })
  t.equal(parseSandboxHost(undefined), null, 'unset: no sandbox (a runner pod)')
  t.equal(parseSandboxHost(''), null)
  const refused: Array<[string, unknown]> = [
    ['a relative bwrap', { ...host, bwrap: 'bwrap' }],
    ['a relative read-only path', { ...host, readOnly: ['tools'] }],
    ['a negative limit', { ...host, limits: { ...DEFAULT_TOOL_LIMITS, fileBytes: -1 } }],
    ['a limit as a string', { ...host, limits: { ...DEFAULT_TOOL_LIMITS, openFiles: '64' } }],
    ['no limits', { bwrap: null, readOnly: [] }],
  ]
  for (const [name, value] of refused) t.throws(() => parseSandboxHost(JSON.stringify(value)), /FFKUBE_SANDBOX must be/, name)
})
