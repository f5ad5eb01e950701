/**
 * test/harness/background-lanes.ts: a test file that needs one of
 * provisioning's background lanes waits for the lane's marker in the folder
 * scripts/test.sh names, fails when the lane failed, and outside `npm test`'s
 * first run does not wait at all. Real marker files in a scratch folder.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import t from 'tap'
import { backgroundLaneDone } from '../harness/background-lanes.js'
import { scratchDir } from '../harness/scratch.js'

t.test('waits until its lane is done, however many other lanes are', async (t) => {
  const markers = await scratchDir(t, 'ffkube-markers-')
  await writeFile(join(markers, 'go-tools.ok'), '')
  let markerWritten = false
  const done = backgroundLaneDone('kube', { FFKUBE_TEST_LANE_MARKERS: markers }).then(() => markerWritten)
  // Had it not waited, it would have resolved before this turn of the event loop.
  await nextTurn()
  markerWritten = true
  await writeFile(join(markers, 'kube.ok'), '')
  t.equal(await done, true, 'resolved only after kube.ok was written')
})

t.test('fails, naming the lane, once the lane failed', async (t) => {
  const markers = await scratchDir(t, 'ffkube-markers-')
  const failed = t.rejects(backgroundLaneDone('images', { FFKUBE_TEST_LANE_MARKERS: markers }), /images lane failed/)
  await writeFile(join(markers, 'images.failed'), '2')
  await failed
})

t.test('returns at once outside npm test’s first run, when no marker folder is named', async (t) => {
  let returned = false
  const done = backgroundLaneDone('kube', {}).then(() => (returned = true))
  await nextTurn()
  t.equal(returned, true, 'no wait: provisioning is over')
  await done
})
