import t from 'tap'
import { classifyEntry, entryNameProblem, FolderBudget, type EntryRecord } from '../../runner-image/runner/fetch/folder-entries.js'

const UNIX = (3 << 8) | 20
const DOS = 20
const file = (name: string, extra: Partial<EntryRecord> = {}): EntryRecord => ({
  name,
  versionMadeBy: UNIX,
  externalFileAttributes: (0o100644 << 16) >>> 0,
  compressedSize: 10,
  uncompressedSize: 10,
  ...extra,
})

t.test('accepts relative names inside the folder', async (t) => {
  for (const name of ['frames/img_001.png', 'list.txt', 'subs/a.srt', 'fonts/DejaVu Sans.ttf', 'Übung/ä.srt', 'a..b/c']) {
    t.equal(entryNameProblem(name), null, name)
  }
})

t.test('refuses names that leave the folder, hide, or collide with the runner layout', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['../x', /"\.\." segment/],
    ['a/../../x', /"\.\." segment/],
    ['/etc/passwd', /absolute/],
    ['C:/windows/x', /drive letter/],
    ['c:x', /drive letter/],
    ['a\\..\\x', /backslash/],
    ['a//b', /empty or "\." segment/],
    ['./a', /empty or "\." segment/],
    ['inputs/in_video.mp4', /reserved top-level name "inputs"/],
    ['outputs/out.mp4', /reserved top-level name "outputs"/],
    ['.ffkube/phases.json', /reserved top-level name "\.ffkube"/],
    ['.hidden', /starting with "\."/],
    ['a/.git/config', /starting with "\."/],
    ['a\u0000b', /control character/],
    ['a\nb', /control character/],
    ['', /empty name/],
    [`${'a'.repeat(256)}`, /longer than 255 bytes/],
    [`${'a/'.repeat(600)}a`, /longer than 1024 bytes/],
  ]
  for (const [name, expected] of cases) t.match(entryNameProblem(name), expected, JSON.stringify(name))
})

t.test('classifies files, folders and archiver metadata', async (t) => {
  t.same(classifyEntry(file('a/b.png')), { kind: 'file', path: 'a/b.png' })
  t.same(classifyEntry(file('frames/', { externalFileAttributes: (0o040755 << 16) >>> 0, uncompressedSize: 0 })), { kind: 'directory', path: 'frames' })
  t.same(classifyEntry(file('frames/', { versionMadeBy: DOS, externalFileAttributes: 0x10, uncompressedSize: 0 })), { kind: 'directory', path: 'frames' }, 'a DOS folder')
  t.same(classifyEntry(file('x.txt', { versionMadeBy: DOS, externalFileAttributes: 0x20 })), { kind: 'file', path: 'x.txt' }, 'a DOS file')
  t.same(classifyEntry(file('y.txt', { externalFileAttributes: 0 })), { kind: 'file', path: 'y.txt' }, 'no mode at all')
  t.equal(classifyEntry(file('__MACOSX/._a.png')).kind, 'skip')
  t.equal(classifyEntry(file('frames/.DS_Store')).kind, 'skip')
})

t.test('refuses symbolic links and special files, whatever host the zip claims', async (t) => {
  const link = (versionMadeBy: number) => file('link', { versionMadeBy, externalFileAttributes: (0o120777 << 16) >>> 0 })
  t.throws(() => classifyEntry(link(UNIX)), { name: 'FolderEntryError', status: 'FOLDER_UNSAFE_ENTRY', message: /entry "link" is a symbolic link/ })
  t.throws(() => classifyEntry(link(DOS)), { status: 'FOLDER_UNSAFE_ENTRY', message: /symbolic link/ }, 'a DOS host byte does not hide a link')
  t.throws(() => classifyEntry(file('__MACOSX/evil', { externalFileAttributes: (0o120777 << 16) >>> 0 })), { message: /symbolic link/ }, 'not skipped as metadata')
  t.throws(() => classifyEntry(file('fifo', { externalFileAttributes: (0o010644 << 16) >>> 0 })), { status: 'FOLDER_UNSAFE_ENTRY', message: /not a regular file or folder/ })
  t.throws(() => classifyEntry(file('dev', { externalFileAttributes: (0o020644 << 16) >>> 0 })), { message: /not a regular file or folder/ })
  t.throws(() => classifyEntry(file('../x')), { status: 'FOLDER_UNSAFE_ENTRY', message: /entry "\.\.\/x" has a "\.\." segment/ })
})

t.test('tallies declared sizes against the caps entry by entry', async (t) => {
  const limits = { maxBytes: 1000, maxEntries: 3, maxRatio: 10 }
  const budget = new FolderBudget(limits)
  t.doesNotThrow(() => budget.add(file('a', { uncompressedSize: 600, compressedSize: 600 })))
  t.throws(() => budget.add(file('b', { uncompressedSize: 401, compressedSize: 401 })), { status: 'FOLDER_TOO_LARGE', message: /entry "b" takes the folder past 1000 uncompressed bytes/ })

  const count = new FolderBudget(limits)
  t.throws(() => count.checkDeclaredCount(4), { status: 'FOLDER_TOO_LARGE', message: /4 entries; at most 3/ })
  for (const name of ['a', 'b', 'c']) count.add(file(name, { uncompressedSize: 0, compressedSize: 0 }))
  t.throws(() => count.add(file('d')), { message: /at most 3/ }, 'counted as entries come, whatever the end record said')

  const bomb = new FolderBudget({ maxBytes: 2 ** 40, maxEntries: 10, maxRatio: 100 })
  t.throws(() => bomb.add(file('zeros', { uncompressedSize: 1024 ** 3, compressedSize: 1_042_000 })), { status: 'FOLDER_TOO_LARGE', message: /entry "zeros" expands 1030 times/ })
})

t.test('judges ratio only above a floor, and over the whole folder', async (t) => {
  const limits = { maxBytes: 2 ** 40, maxEntries: 10_000, maxRatio: 100 }
  const small = new FolderBudget(limits)
  t.doesNotThrow(() => small.add(file('empty.txt', { uncompressedSize: 500_000, compressedSize: 10 })), 'a small file may compress very well')
  t.doesNotThrow(() => small.checkTotalRatio())

  const many = new FolderBudget(limits)
  for (let i = 0; i < 8; i++) many.add(file(`part${i}`, { uncompressedSize: 900_000, compressedSize: 100 }))
  t.throws(() => many.checkTotalRatio(), { status: 'FOLDER_TOO_LARGE', message: /the zip expands 9000 times; at most 100/ })
})
