import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import t, { type Test } from 'tap'
import { RunControls } from '../../api/executors/run-controls.js'
import type { RunnerExit, RunnerProcess } from '../../api/executors/runner-pool.js'

/** A real process standing for a warm worker's job: kill() signals it, as the pool's RunnerProcess signals its worker. */
function worker(t: Test): { child: ChildProcess; runner: RunnerProcess } {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' })
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const exited = once(child, 'exit').then(([code, signal]): RunnerExit => ({ code: code as number | null, signal: signal as NodeJS.Signals | null, stderrTail: '' }))
  return { child, runner: { pid: child.pid ?? -1, exited, kill: (signal) => void child.kill(signal) } }
}

/** The next turn of the event loop: by then every promise that was already settled has run its callbacks (no timing involved). */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

t.test('a cancel kills the running runner and resolves once the run has ended', async (t) => {
  const controls = new RunControls(1)
  const control = controls.open('c1')
  const { child, runner } = worker(t)
  controls.started(control, runner)
  const order: string[] = []
  const cancelled = controls.cancel('c1').then(() => order.push('cancel resolved'))
  const [, signal] = await once(child, 'exit')
  t.equal(signal, 'SIGKILL')
  t.equal(control.cancelled, true)
  await nextTurn()
  order.push('run closed')
  controls.close('c1', control)
  await cancelled
  t.same(order, ['run closed', 'cancel resolved'], 'the cancel waited for the run to end')
})

t.test('a cancel after the runner exited kills nothing: its warm worker may run another command by then', async (t) => {
  const controls = new RunControls(1)
  const control = controls.open('c1')
  // The same worker process, reused by the next command once this one's job ended.
  const { child, runner } = worker(t)
  controls.started(control, runner)
  controls.exited(control)
  await controls.cancel('c1')
  t.equal(control.cancelled, true, 'the run is marked cancelled')
  t.equal(child.killed, false, 'no signal was sent to the worker')
})

t.test('a run cancelled before its runner started has it killed as it starts', async (t) => {
  const controls = new RunControls(1)
  const control = controls.open('c1')
  await controls.cancel('c1')
  const { child, runner } = worker(t)
  controls.started(control, runner)
  const [, signal] = await once(child, 'exit')
  t.equal(signal, 'SIGKILL')
})

t.test('at most `size` runs have a turn; the others get theirs in arrival order as turns are given back', async (t) => {
  const controls = new RunControls(2)
  const order: string[] = []
  const first = await controls.turn()
  const second = await controls.turn()
  const third = controls.turn().then((release) => (order.push('third'), release))
  const fourth = controls.turn().then((release) => (order.push('fourth'), release))
  await nextTurn()
  t.same(order, [], 'both turns are taken: the third and fourth wait')
  second!()
  second!()
  const thirdRelease = await third
  await nextTurn()
  t.same(order, ['third'], 'a turn given back twice frees one turn')
  first!()
  const fourthRelease = await fourth
  t.same(order, ['third', 'fourth'])
  thirdRelease!()
  fourthRelease!()
  const again = await controls.turn()
  t.type(again, 'function', 'turns given back are free again')
})

t.test('stop() turns the waiting runs away and kills the running runners, not one that exited', async (t) => {
  const controls = new RunControls(1)
  const running = controls.open('c1')
  const ended = controls.open('c2')
  await controls.turn()
  const waiting = controls.turn()
  const a = worker(t)
  const b = worker(t)
  controls.started(running, a.runner)
  controls.started(ended, b.runner)
  controls.exited(ended)
  controls.stop()
  t.equal(await waiting, null, 'the waiting run gets no turn')
  t.equal(await controls.turn(), null, 'nor does a later one')
  const [, signal] = await once(a.child, 'exit')
  t.equal(signal, 'SIGKILL', 'the running runner is killed')
  t.equal(b.child.killed, false, 'the exited run sent no signal')
})
