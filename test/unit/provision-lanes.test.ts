/**
 * scripts/lib/lanes.sh, which runs scripts/provision.sh's steps side by side:
 * run through bash with steps that only touch files, so each property is seen
 * for real: lanes overlap, `after` orders, the first failure fails the
 * whole and stops every other lane with what it started, markers stay where
 * the caller reads them, two runs take turns per lane, and a niced lane is.
 */
import { execFile } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { getPriority } from 'node:os'
import { join, resolve } from 'node:path'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { scratchDir } from '../harness/scratch.js'

const LANES = resolve('scripts/lib/lanes.sh')

/** Runs `body` after sourcing lanes.sh under `set -euo pipefail`; never rejects. */
function runLanes(dir: string, body: string): Promise<{ code: number; stderr: string; stdout: string }> {
  const script = `set -euo pipefail\nsource ${JSON.stringify(LANES)}\ndir=${JSON.stringify(dir)}\n${body}`
  return new Promise((done) => {
    execFile('bash', ['-c', script], { timeout: 120_000 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr })
    })
  })
}

t.test('lanes run side by side, a lane with `after` starts once those ended, and the output names each lane', async (t) => {
  const dir = await scratchDir(t, 'ffkube-lanes-')
  const run = await runLanes(dir, `
    # first waits for a file only second writes: run one after the other, first would never end.
    first() { until [[ -e "$dir/second-ran" ]]; do sleep 0.05; done; echo "first saw second"; }
    second() { : >"$dir/second-ran"; echo "second ran"; }
    third() { echo "third after first"; }
    lanes_start
    lane one first
    lane two second
    lane three after one -- third
    lanes_wait
    echo "all done"
  `)
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stdout, 'all done\n')
  const lines = run.stderr.split('\n')
  t.ok(lines.includes('[one] first saw second'))
  t.ok(lines.includes('[two] second ran'))
  t.ok(lines.indexOf('[three] third after first') > lines.indexOf('[one] first saw second'), 'three started after one ended')
})

t.test('the first lane that fails fails the whole with its status and stops the other lanes and what they started', async (t) => {
  const dir = await scratchDir(t, 'ffkube-lanes-')
  const run = await runLanes(dir, `
    slow() { sleep 600 & echo $! >"$dir/sleeper"; wait; }
    broken() { until [[ -e "$dir/sleeper" ]]; do sleep 0.05; done; echo "about to fail"; exit 3; }
    never() { echo "must not run"; }
    lanes_start
    lane slow slow
    lane broken broken
    lane later after broken -- never
    lanes_wait || exit $?
    echo "not reached"
  `)
  t.equal(run.code, 3, 'the failing lane’s status')
  t.notMatch(run.stdout, /not reached/)
  t.match(run.stderr, /^\[broken\] about to fail$/m)
  t.match(run.stderr, /^lanes: broken failed \(exit 3\); stopping the others$/m)
  t.notMatch(run.stderr, /must not run/, 'a lane after the failed one never runs its steps')
  const sleeper = Number(await readFile(join(dir, 'sleeper'), 'utf8'))
  await eventually('the slow lane’s sleep 600 to be stopped', () => {
    try {
      process.kill(sleeper, 0)
      return false
    } catch {
      return true
    }
  })
})

t.test('a set -e failure inside a step fails its lane, as in a serial script', async (t) => {
  const dir = await scratchDir(t, 'ffkube-lanes-')
  const run = await runLanes(dir, `
    step() { false; echo "after false"; }
    lanes_start
    lane strict step
    lanes_wait || exit $?
  `)
  t.equal(run.code, 1)
  t.notMatch(run.stderr, /after false/)
  t.match(run.stderr, /^\[strict\] lanes: failed \(exit 1\)/m)
})

t.test('with --markers each lane leaves NAME.ok or NAME.failed in the caller’s folder, which outlives the run and is cleared when the next starts', async (t) => {
  const dir = await scratchDir(t, 'ffkube-lanes-')
  const markers = join(dir, 'markers')
  const run = await runLanes(dir, `
    mkdir -p ${JSON.stringify(markers)}
    : >${JSON.stringify(join(markers, 'stale.ok'))}
    fine() { echo fine; }
    broken() { exit 4; }
    lanes_start --markers ${JSON.stringify(markers)}
    lane good fine
    lane bad after good -- broken
    lanes_wait || echo "wait returned $?"
  `)
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stdout, 'wait returned 4\n')
  t.same((await readdir(markers)).sort(), ['bad.failed', 'good.ok'], 'this run’s markers only, left in place')
  t.equal(await readFile(join(markers, 'bad.failed'), 'utf8'), '4', 'a failed lane’s marker holds its status')
})

t.test('with --locks two runs take turns lane by lane: the second run’s lane waits until the first run’s lane of that name ends', async (t) => {
  const dir = await scratchDir(t, 'ffkube-lanes-')
  const locks = join(dir, 'locks')
  // Both runs append to one log; the first holds its lane until the test lets it go.
  const script = (who: string) => `
    exec 2>>"$dir/${who}.err"
    build() { echo "${who} start" >>"$dir/log"; if [[ ${who} == first ]]; then until [[ -e "$dir/release" ]]; do sleep 0.05; done; fi; echo "${who} end" >>"$dir/log"; }
    lanes_start --locks ${JSON.stringify(locks)}
    lane kube build
    lanes_wait
  `
  const text = (name: string) => readFile(join(dir, name), 'utf8').catch(() => '')
  const first = runLanes(dir, script('first'))
  await eventually('the first run to start its lane', async () => (await text('log')).includes('first start'))
  const second = runLanes(dir, script('second'))
  await eventually('the second run to say it waits for the lane', async () => (await text('second.err')).includes("[kube] lanes: waiting for another run's kube lane to end"))
  await writeFile(join(dir, 'release'), '')
  const [a, b] = await Promise.all([first, second])
  t.equal(a.code, 0, await text('first.err'))
  t.equal(b.code, 0, await text('second.err'))
  t.equal(await text('log'), 'first start\nfirst end\nsecond start\nsecond end\n', 'the second build ran after the first ended')
})

t.test('a lane with `nice N` runs its steps, and what they start, at that niceness; the others keep theirs', async (t) => {
  const dir = await scratchDir(t, 'ffkube-lanes-')
  const run = await runLanes(dir, `
    niceness() { echo "step $(nice)"; bash -c 'echo "child $(nice)"'; }
    lanes_start
    lane background nice 15 niceness
    lane foreground niceness
    lanes_wait
  `)
  t.equal(run.code, 0, run.stderr)
  const lines = run.stderr.split('\n')
  t.ok(lines.includes('[background] step 15'), run.stderr)
  t.ok(lines.includes('[background] child 15'), run.stderr)
  t.ok(lines.includes(`[foreground] step ${getPriority()}`), run.stderr)
})
