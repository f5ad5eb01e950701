import { join } from 'node:path'
import t from 'tap'
import { acquireHostLock } from '../harness/cluster/host-lock.js'
import { run } from '../harness/cluster/run.js'
import { scratchDir } from '../harness/scratch.js'

/** Whether another process could take the lock right now (flock --nonblock). */
async function isFree(path: string): Promise<boolean> {
  return run('flock', ['--nonblock', path, 'true']).then(
    () => true,
    () => false,
  )
}

t.test('the host lock is held until released, and a waiting caller gets it then', async (t) => {
  const path = join(await scratchDir(t), 'cluster.lock')
  const releaseFirst = await acquireHostLock(path)
  t.notOk(await isFree(path), 'the first holder keeps others out')
  const second = acquireHostLock(path)
  await releaseFirst()
  const releaseSecond = await second
  t.notOk(await isFree(path), 'the waiting caller holds it after the release')
  await releaseSecond()
  t.ok(await isFree(path), 'released again')
})
