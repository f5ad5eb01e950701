/**
 * The runner's collection of multi-file outputs on a work dir made by the
 * test (no ffmpeg): what a folder may hold, the file-count cap across
 * outputs, the main file, and two outputs that would share a stored name.
 */
import { execFile } from 'node:child_process'
import { mkdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import { collectOutputs, producedFiles, type ProducedFile } from '../../runner-image/runner/produced-files.js'
import { objectsToStore } from '../../runner-image/runner/upload/upload-phase.js'
import { specOf } from '../runner/harness.js'
import { scratchDir } from '../harness/scratch.js'

const folder = (alias: string, filename: string, main = filename): ProducedFile => ({ alias, filename, path: `outputs/${alias}`, main })
const single = (alias: string, filename: string): ProducedFile => ({ alias, filename, path: `outputs/${filename}`, main: null })

async function failureOf(promise: Promise<unknown>): Promise<RunnerFailure> {
  const error = await promise.then(() => null, (e: unknown) => e)
  if (!(error instanceof RunnerFailure)) throw new Error(`expected a RunnerFailure, got ${String(error)}`)
  return error
}

t.test('produced files: a folder output is its alias folder with the plan’s main name', async (t) => {
  const spec = specOf({ outputFiles: { out_t: 'thumb_%03d.jpg', out_v: 'v.mp4' } })
  t.same(producedFiles(spec, { downloads: null, failedFiles: null }, { out_t: 'thumb_%03d.jpg' }), [
    { alias: 'out_t', filename: 'thumb_%03d.jpg', path: 'outputs/out_t', main: 'thumb_%03d.jpg' },
    { alias: 'out_v', filename: 'v.mp4', path: 'outputs/v.mp4', main: null },
  ])
})

t.test('collecting outputs from a work dir', async (t) => {
  const work = await scratchDir(t)
  const write = async (path: string, body = 'x') => {
    await mkdir(join(work, path, '..'), { recursive: true })
    await writeFile(join(work, path), body)
  }

  t.test('every regular file of a folder, in name order, the main one by its pattern, sizes read', async (t) => {
    for (const n of [10, 2, 1]) await write(`outputs/out_a/thumb_${n}.jpg`, 'x'.repeat(n))
    await write('outputs/v.mp4')
    const [a, v] = await collectOutputs(work, [folder('out_a', 'thumb_%d.jpg'), single('out_v', 'v.mp4')], 10)
    t.same(a?.members?.map((m) => [m.relative, m.sizeBytes]), [['thumb_1.jpg', 1], ['thumb_2.jpg', 2], ['thumb_10.jpg', 10]])
    t.equal(a?.mainName, 'thumb_1.jpg')
    t.equal(a?.mainPath, 'outputs/out_a/thumb_1.jpg')
    t.same([v?.members, v?.mainPath], [null, 'outputs/v.mp4'])
  })

  t.test('the cap counts every file of every output', async (t) => {
    const failure = await failureOf(collectOutputs(work, [folder('out_a', 'thumb_%d.jpg'), single('out_v', 'v.mp4')], 3))
    t.equal(failure.errorStatus, 'OUTPUT_TOO_MANY_FILES')
    t.match(failure.message, /more than 3 files/)
  })

  t.test('a link, a FIFO, or a link in the folder’s place fail the command', async (t) => {
    await write('outputs/out_l/a.ts')
    await symlink('/etc/hostname', join(work, 'outputs/out_l/b.ts'))
    t.equal((await failureOf(collectOutputs(work, [folder('out_l', 'x.m3u8')], 10))).errorStatus, 'OUTPUT_NOT_REGULAR_FILE')
    await write('outputs/out_f/a.ts')
    await promisify(execFile)('mkfifo', [join(work, 'outputs/out_f/pipe.ts')])
    t.equal((await failureOf(collectOutputs(work, [folder('out_f', 'x.m3u8')], 10))).errorStatus, 'OUTPUT_NOT_REGULAR_FILE')
    await symlink(join(work, 'outputs/out_a'), join(work, 'outputs/out_s'))
    t.equal((await failureOf(collectOutputs(work, [folder('out_s', 'thumb_%d.jpg')], 10))).errorStatus, 'OUTPUT_MISSING')
  })

  t.test('an empty or absent folder is OUTPUT_MISSING', async (t) => {
    await mkdir(join(work, 'outputs/out_e'), { recursive: true })
    t.equal((await failureOf(collectOutputs(work, [folder('out_e', 'x_%d.png')], 10))).errorStatus, 'OUTPUT_MISSING')
    t.equal((await failureOf(collectOutputs(work, [folder('out_none', 'x_%d.png')], 10))).errorStatus, 'OUTPUT_MISSING')
  })

  t.test('two outputs that would be stored under one name fail before anything is stored', async (t) => {
    await write('outputs/out_h/playlist.m3u8')
    await write('outputs/playlist.m3u8.bak')
    await write('outputs/out_g/playlist.m3u8')
    const collected = await collectOutputs(work, [folder('out_h', 'playlist.m3u8'), folder('out_g', 'playlist.m3u8')], 10)
    t.throws(() => objectsToStore(collected), { errorStatus: 'OUTPUT_NAME_CONFLICT', message: /out_h and out_g would both be stored as playlist.m3u8/ })
    const fine = await collectOutputs(work, [folder('out_h', 'playlist.m3u8'), single('out_v', 'v.mp4')], 10)
    t.same(objectsToStore(fine).map((o) => [o.alias, o.filename, o.path, o.contentType]), [
      ['out_h', 'playlist.m3u8', 'outputs/out_h/playlist.m3u8', 'application/vnd.apple.mpegurl'],
      ['out_v', 'v.mp4', 'outputs/v.mp4', 'video/mp4'],
    ])
  })
})
