/**
 * What the local executor's work-directory cap measures (api/executors/runner-supervision.ts
 * directoryBytes): every file of the tree, a sparse one at its apparent size, a
 * symbolic link as itself.
 */
import { mkdir, open, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { directoryBytes } from '../../api/executors/runner-supervision.js'
import { scratchDir } from '../harness/scratch.js'

t.test('a tree of more files than one batch counts every file, nested folders included', async (t) => {
  const dir = await scratchDir(t)
  await mkdir(join(dir, 'outputs', 'out_hls'), { recursive: true })
  // 600 files of 5000 bytes: more than two batches of the walk; each takes at least its apparent size.
  for (let i = 0; i < 600; i++) await writeFile(join(dir, 'outputs', 'out_hls', `seg_${i}.ts`), Buffer.alloc(5000, 1))
  const bytes = await directoryBytes(dir)
  t.ok(bytes >= 600 * 5000, `${bytes} bytes counted for 600 files of 5000`)
  // Blocks are at most a 4 KiB-rounded size per file, and the two folders are small.
  t.ok(bytes <= 600 * 8192 + 2 * 64 * 1024, `${bytes} bytes is no more than the files' blocks and the folders`)
})

t.test('a sparse file counts at its apparent size, and a link to a large file as the link only', async (t) => {
  const dir = await scratchDir(t)
  const outside = await scratchDir(t)
  const sparse = await open(join(dir, 'sparse.bin'), 'w')
  await sparse.truncate(64 * 1024 * 1024)
  await sparse.close()
  await writeFile(join(outside, 'large.bin'), Buffer.alloc(8 * 1024 * 1024))
  await symlink(join(outside, 'large.bin'), join(dir, 'link.bin'))
  const bytes = await directoryBytes(dir)
  t.ok(bytes >= 64 * 1024 * 1024, 'the sparse file counts at its apparent size')
  t.ok(bytes < 64 * 1024 * 1024 + 1024 * 1024, 'the link does not count the file it points to')
})

t.test('a folder that does not exist holds nothing', async (t) => {
  const dir = await scratchDir(t)
  t.equal(await directoryBytes(join(dir, 'gone')), 0)
})
