/**
 * The key the FFmpeg build folder and the images' build context take from
 * scripts/ffmpeg/build-ffmpeg.sh (`--key`, docs/adr/0005-libxml2-dash.md):
 * its code decides it, its comments do not.
 */
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { checkoutPath } from '../harness/checkout.js'

const run = promisify(execFile)
const SCRIPT = checkoutPath('scripts', 'ffmpeg', 'build-ffmpeg.sh')

async function keyOf(path: string): Promise<string> {
  return (await run('bash', [path, '--key'])).stdout.trim()
}

t.test('a comment edit keeps the FFmpeg build key; a flag or pin edit changes it', async (t) => {
  const dir = t.testdir({})
  const script = await readFile(SCRIPT, 'utf8')
  const key = await keyOf(SCRIPT)
  t.match(key, /^[0-9a-f]{16}$/)
  const variant = async (name: string, text: string) => {
    t.not(text, script, `${name} is an edit`)
    await writeFile(join(dir, name), text)
    return keyOf(join(dir, name))
  }
  t.equal(await variant('comment.sh', script.replace(/^# THE build/m, '# The build').replace(/\n\n/, '\n\n# a new comment line\n\n')), key)
  t.not(await variant('flag.sh', script.replace('  --enable-libxml2\n', '  --enable-libxml2 --enable-small\n')), key)
  t.not(await variant('pin.sh', script.replace(/^LIBXML2_DEBIAN_REVISION=.*$/m, 'LIBXML2_DEBIAN_REVISION=1.3~deb12u7')), key)
})
