import { execFile } from 'node:child_process'
import { cp, mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { scratchDir } from '../harness/scratch.js'

const run = promisify(execFile)
/** A release older than the pin, so the move is a real one (PyPI keeps every release). */
const OTHER_RELEASE = '2026.10.21'

/** A copy of what the script edits and runs, so the checkout is left alone. */
async function copyOfTheTree(dir: string): Promise<string> {
  const root = join(dir, 'tree')
  await mkdir(join(root, 'runner-image'), { recursive: true })
  await cp('scripts', join(root, 'scripts'), { recursive: true })
  await cp('runner-image/Dockerfile', join(root, 'runner-image/Dockerfile'))
  return root
}

t.test('npm run pin-ytdlp moves the pin in both files and installs that yt-dlp for local mode', async (t) => {
  const dir = await scratchDir(t)
  const root = await copyOfTheTree(dir)
  const cache = join(dir, 'cache')
  const { stderr } = await run('bash', [join(root, 'scripts/pin-ytdlp.sh'), OTHER_RELEASE], { env: { ...process.env, FFKUBE_CACHE: cache }, timeout: 600_000 })
  t.match(await readFile(join(root, 'scripts/provision.sh'), 'utf8'), new RegExp(`^YTDLP_VERSION=${OTHER_RELEASE.replace(/\./g, '\\.')}$`, 'm'))
  t.match(await readFile(join(root, 'runner-image/Dockerfile'), 'utf8'), new RegExp(`^ARG YTDLP_VERSION=${OTHER_RELEASE.replace(/\./g, '\\.')}$`, 'm'))
  const installed = await run(join(cache, 'bin/yt-dlp'), ['--version'])
  t.equal(installed.stdout.trim(), OTHER_RELEASE, 'local mode runs the new pin')
  t.match(stderr, /rebuild the runner image/, 'without BuildKit here it says how to ship it to the images')
})

t.test('pin-ytdlp refuses what is not a release, and a version PyPI does not have, changing nothing', async (t) => {
  const dir = await scratchDir(t)
  const root = await copyOfTheTree(dir)
  const before = await readFile(join(root, 'scripts/provision.sh'), 'utf8')
  for (const [argument, message] of [['--exec=rm', /not a yt-dlp release version/], ['2026.1.1', /PyPI has no yt-dlp 2026\.1\.1/]] as const) {
    const failed = await run('bash', [join(root, 'scripts/pin-ytdlp.sh'), argument], { env: { ...process.env, FFKUBE_CACHE: join(dir, 'cache') } }).catch((error: { code: number; stderr: string }) => error)
    t.not('code' in failed ? failed.code : 0, 0, `${argument}: exits non-zero`)
    t.match('stderr' in failed ? failed.stderr : '', message, argument)
  }
  t.equal(await readFile(join(root, 'scripts/provision.sh'), 'utf8'), before, 'provision.sh untouched')
})
