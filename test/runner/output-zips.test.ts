/**
 * writeZip on real files: what collectOutputs checked may have changed by the
 * time the zip is written (the Job's upload container runs later), so each
 * entry is opened without following a link and must be a regular file.
 */
import { execFile } from 'node:child_process'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import { removeZips, writeZip, ZIP_DIR } from '../../runner-image/runner/upload/output-zips.js'
import { scratchDir } from '../harness/scratch.js'
import { readZip } from '../harness/unzip.js'

const run = promisify(execFile)

t.test('writeZip writes each entry by its name, deflating text and storing media, and removeZips leaves no copy', async (t) => {
  const work = await scratchDir(t, 'ffkube-zips-')
  await mkdir(join(work, 'outputs', 'out_hls'), { recursive: true })
  const playlist = '#EXTM3U\n#EXT-X-VERSION:3\n'.repeat(50)
  await writeFile(join(work, 'outputs', 'out_hls', 'playlist.m3u8'), playlist)
  await writeFile(join(work, 'outputs', 'out_hls', 'seg_000.ts'), Buffer.alloc(4096, 7))
  const size = await writeZip(work, {
    alias: 'out_hls', filename: 'out_hls.zip', path: `${ZIP_DIR}/out_hls.zip`,
    entries: [{ name: 'playlist.m3u8', path: 'outputs/out_hls/playlist.m3u8' }, { name: 'seg_000.ts', path: 'outputs/out_hls/seg_000.ts' }],
  })
  const zip = await readFile(join(work, ZIP_DIR, 'out_hls.zip'))
  t.equal(size, zip.length)
  const entries = await readZip(zip)
  t.same(entries.map((e) => [e.name, e.compressionMethod]), [['playlist.m3u8', 8], ['seg_000.ts', 0]])
  t.equal(entries[0]?.data.toString('utf8'), playlist)
  t.same(entries[1]?.data, Buffer.alloc(4096, 7))
  await removeZips(work)
  await t.rejects(readFile(join(work, ZIP_DIR, 'out_hls.zip')), { code: 'ENOENT' })
})

t.test('an entry swapped for a link or a FIFO fails the zip with OUTPUT_NOT_REGULAR_FILE instead of reading through it', async (t) => {
  const scratch = await scratchDir(t, 'ffkube-zips-')
  const work = join(scratch, 'work')
  const secret = join(scratch, 'secret')
  await writeFile(secret, 'a file outside the work dir')
  await mkdir(join(work, 'outputs', 'out_x'), { recursive: true })
  await writeFile(join(work, 'outputs', 'out_x', 'a.jpg'), 'a')
  await symlink(secret, join(work, 'outputs', 'out_x', 'b.jpg'))
  await run('mkfifo', [join(work, 'outputs', 'out_x', 'c.jpg')])
  for (const name of ['b.jpg', 'c.jpg']) {
    const zip = { alias: 'out_x', filename: `out_x_${name}.zip`, path: `${ZIP_DIR}/out_x_${name}.zip`, entries: [{ name: 'a.jpg', path: 'outputs/out_x/a.jpg' }, { name, path: `outputs/out_x/${name}` }] }
    await t.rejects(writeZip(work, zip), new RunnerFailure('OUTPUT_NOT_REGULAR_FILE', `out_x: ${name} is not a regular file; nothing was stored`), name)
  }
})
