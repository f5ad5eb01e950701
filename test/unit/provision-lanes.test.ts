/**
 * scripts/lib/lanes.sh, which runs scripts/provision.sh's steps side by side:
 * run through bash with steps that only touch files, so each property is seen
 * for real: lanes overlap, `after` orders, and the first failure fails the
 * whole and stops every other lane with what it started.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
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
