import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { unpackFolder } from '../../runner-image/runner/fetch/folder-unpack.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'
import { buildZip, type ZipEntrySpec } from '../harness/zip-writer.js'

const LIMITS = { maxBytes: 4 * 1024 * 1024, maxEntries: 20, maxRatio: 100 }

/** A work dir (with the runner's own folders, as the fetch phase leaves them) beside a zip of `entries`. */
async function setup(t: Teardown, entries: readonly ZipEntrySpec[] | Buffer) {
  const root = await scratchDir(t)
  const workDir = join(root, 'work')
  await mkdir(join(workDir, 'inputs'), { recursive: true })
  await mkdir(join(workDir, '.ffkube'), { recursive: true })
  await writeFile(join(workDir, 'inputs', 'in_a.mp4'), 'the fetched input')
  const zipPath = join(root, 'folder.zip')
  await writeFile(zipPath, Buffer.isBuffer(entries) ? entries : buildZip(entries))
  return { root, workDir, zipPath }
}

/** Every path under `dir`, relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true })
  return entries.map(String).sort()
}

t.test('unpacks files and folders into the work dir root', async (t) => {
  const { workDir, zipPath } = await setup(t, [
    { name: 'frames/' },
    { name: 'frames/img_001.png', data: 'one' },
    { name: 'frames/img_002.png', data: 'two', method: 'stored' },
    { name: 'subs/a.srt', data: '1\n00:00:00,000 --> 00:00:01,000\nhi\n' },
    { name: '__MACOSX/._a.srt', data: 'resource fork' },
  ])
  const unpacked = await unpackFolder(zipPath, workDir, LIMITS)
  t.same(unpacked.files, ['frames/img_001.png', 'frames/img_002.png', 'subs/a.srt'])
  t.equal(await readFile(join(workDir, 'frames/img_002.png'), 'utf8'), 'two')
  t.equal(await readFile(join(workDir, 'subs/a.srt'), 'utf8'), '1\n00:00:00,000 --> 00:00:01,000\nhi\n')
  t.equal((await lstat(join(workDir, 'frames/img_001.png'))).mode & 0o777, 0o644)
  t.equal((await lstat(join(workDir, 'subs'))).mode & 0o777, 0o755)
  t.notOk((await tree(workDir)).some((path) => path.startsWith('__MACOSX')), 'archiver metadata is skipped')
})

const refusals: Array<[string, ZipEntrySpec[], string, RegExp]> = [
  ['zip-slip with ..', [{ name: 'ok.txt', data: 'x' }, { name: '../escaped.txt', data: 'x' }], 'FOLDER_UNSAFE_ENTRY', /entry "\.\.\/escaped\.txt" has a "\.\." segment/],
  ['zip-slip deeper', [{ name: 'a/../../escaped.txt', data: 'x' }], 'FOLDER_UNSAFE_ENTRY', /"\.\." segment/],
  ['an absolute name', [{ name: '/tmp/escaped.txt', data: 'x' }], 'FOLDER_UNSAFE_ENTRY', /entry "\/tmp\/escaped\.txt" has an absolute name/],
  ['a backslash name', [{ name: '..\\escaped.txt', data: 'x' }], 'FOLDER_UNSAFE_ENTRY', /backslash/],
  ['a drive letter', [{ name: 'C:/escaped.txt', data: 'x' }], 'FOLDER_UNSAFE_ENTRY', /drive letter/],
  ['a symlink entry', [{ name: 'passwd', data: '/etc/passwd', mode: 0o120777 }], 'FOLDER_UNSAFE_ENTRY', /entry "passwd" is a symbolic link/],
  ['a symlinked folder then a file through it', [{ name: 'dir', data: '/tmp', mode: 0o120777 }, { name: 'dir/x', data: 'x' }], 'FOLDER_UNSAFE_ENTRY', /symbolic link/],
  ['the runner inputs folder', [{ name: 'inputs/in_a.mp4', data: 'replaced' }], 'FOLDER_UNSAFE_ENTRY', /reserved top-level name "inputs"/],
  ['the runner state folder', [{ name: '.ffkube/phases.json', data: '{}' }], 'FOLDER_UNSAFE_ENTRY', /reserved top-level name "\.ffkube"/],
  ['the outputs folder', [{ name: 'outputs/out.mp4', data: 'x' }], 'FOLDER_UNSAFE_ENTRY', /reserved top-level name "outputs"/],
  ['a name twice', [{ name: 'a.txt', data: '1' }, { name: 'a.txt', data: '2' }], 'FOLDER_UNSAFE_ENTRY', /entry "a\.txt" appears twice/],
  ['a file where a folder must go', [{ name: 'a', data: '1' }, { name: 'a/b', data: '2' }], 'FOLDER_UNSAFE_ENTRY', /entry "a\/b" cannot be created/],
  ['bytes over the cap by headers', [{ name: 'a.bin', data: Buffer.alloc(3_000_000, 1), method: 'stored' }, { name: 'b.bin', data: Buffer.alloc(1_200_000, 2), method: 'stored' }], 'FOLDER_TOO_LARGE', /entry "b\.bin" takes the folder past 4194304 uncompressed bytes/],
  ['a bomb by ratio', [{ name: 'zeros.bin', data: Buffer.alloc(2_000_000) }], 'FOLDER_TOO_LARGE', /entry "zeros\.bin" expands \d+ times/],
  ['entries over the cap', Array.from({ length: 21 }, (_, i) => ({ name: `f${i}.txt`, data: 'x' })), 'FOLDER_TOO_LARGE', /21 entries; at most 20/],
  ['a huge declared size', [{ name: 'huge.bin', data: 'tiny', declaredSize: 0xfffffff0 }], 'FOLDER_TOO_LARGE', /entry "huge\.bin" takes the folder past/],
  ['an entry whose header understates its size', [{ name: 'liar.bin', data: Buffer.alloc(5000, 7), declaredSize: 10 }], 'FOLDER_INVALID', /entry "liar\.bin" cannot be read: .*too many bytes/],
  ['an entry whose header overstates its size', [{ name: 'short.bin', data: Buffer.alloc(50, 7), declaredSize: 5000 }], 'FOLDER_INVALID', /entry "short\.bin" cannot be read/],
  ['an encrypted entry', [{ name: 'secret.txt', data: 'x', encrypted: true }], 'FOLDER_INVALID', /entry "secret\.txt" is encrypted/],
  ['a zip of folders only', [{ name: 'empty/' }], 'FOLDER_INVALID', /holds no files/],
]

for (const [what, entries, status, message] of refusals) {
  t.test(`refuses ${what}, writing nothing outside the work dir`, async (t) => {
    const { root, workDir, zipPath } = await setup(t, entries)
    const before = await tree(root)
    await t.rejects(unpackFolder(zipPath, workDir, LIMITS), { name: 'FolderEntryError', status, message })
    const after = await tree(root)
    t.notOk(after.some((path) => path.includes('escaped')), 'nothing escaped')
    t.equal(await readFile(join(workDir, 'inputs', 'in_a.mp4'), 'utf8'), 'the fetched input', 'the fetched input is untouched')
    // Only faults that show while writing (a lying stream, a name already taken) come after the first write.
    if (!/cannot be (read|created)/.test(message.source)) t.same(after, before, 'refused from the central directory, before any write')
  })
}

t.test('judges the name readers use: a Unicode Path field overrides the plain name', async (t) => {
  const { root, workDir, zipPath } = await setup(t, [{ name: 'ok.txt', unicodePath: '../escaped.txt', data: 'x' }])
  await t.rejects(unpackFolder(zipPath, workDir, LIMITS), { status: 'FOLDER_UNSAFE_ENTRY', message: /entry "\.\.\/escaped\.txt" has a "\.\." segment/ })
  t.notOk((await tree(root)).some((path) => path.includes('escaped')))
})

t.test('writes by the central directory name, whatever the local header says', async (t) => {
  const { root, workDir, zipPath } = await setup(t, [{ name: 'ok.txt', localName: '../escaped.txt', data: 'x' }])
  t.same((await unpackFolder(zipPath, workDir, LIMITS)).files, ['ok.txt'])
  t.equal(await readFile(join(workDir, 'ok.txt'), 'utf8'), 'x')
  t.notOk((await tree(root)).some((path) => path.includes('escaped')))
})

t.test('refuses an end record announcing more entries than the cap, before reading them', async (t) => {
  const { workDir, zipPath } = await setup(t, buildZip([{ name: 'a.txt', data: 'x' }], { declaredCount: 65_000 }))
  await t.rejects(unpackFolder(zipPath, workDir, LIMITS), { status: 'FOLDER_TOO_LARGE', message: /the zip has 65000 entries; at most 20/ })
})

t.test('refuses a file that is not a zip', async (t) => {
  const { workDir, zipPath } = await setup(t, Buffer.from('<html>not a zip</html>'))
  await t.rejects(unpackFolder(zipPath, workDir, LIMITS), { status: 'FOLDER_INVALID', message: /not a readable zip/ })
})

t.test('never writes through a file that already exists in the work dir', async (t) => {
  const { workDir, zipPath } = await setup(t, [{ name: 'list.txt', data: 'from the zip' }])
  await writeFile(join(workDir, 'list.txt'), 'already here')
  await t.rejects(unpackFolder(zipPath, workDir, LIMITS), { status: 'FOLDER_UNSAFE_ENTRY', message: /entry "list\.txt" cannot be created/ })
  t.equal(await readFile(join(workDir, 'list.txt'), 'utf8'), 'already here')
})
