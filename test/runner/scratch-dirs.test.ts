import t from 'tap'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { main } from '../../runner-image/runner/main.js'
import { scratchDir } from '../harness/scratch.js'

t.test('the runner creates TMPDIR and HOME, which a pod points into its empty work volume', async (t) => {
  const work = await scratchDir(t, 'ffkube-scratch-dirs-')
  const env = { TMPDIR: join(work, '.tmp'), HOME: join(work, '.home'), FFKUBE_WORK_DIR: work, FFKUBE_COMMAND_SPEC: '{"not":"a spec"}' }
  const code = await main({ argv: ['--phase', 'fetch'], env, stdin: Readable.from([]), stdout: new Writable({ write: (_c, _e, next) => next() }) })
  t.equal(code, 2, 'the spec is refused, after the directories were made')
  t.ok((await stat(env.TMPDIR)).isDirectory(), 'TMPDIR exists')
  t.ok((await stat(env.HOME)).isDirectory(), 'HOME exists')
})
