import t from 'tap'
import { Worker } from 'node:worker_threads'
import { runProbes } from '../../api/health/readiness.js'

/**
 * A dependency that answers from another thread: its answer is a message, which
 * the event loop reads in its poll phase, as it reads a server's reply on a socket.
 * `answered` turns 1 once the answer has been sent.
 */
function answeringThread() {
  const answered = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads')
     parentPort.once('message', () => {
       parentPort.postMessage('pong')
       Atomics.store(workerData, 0, 1)
       Atomics.notify(workerData, 0)
     })`,
    { eval: true, workerData: answered },
  )
  const ping = () => new Promise<void>((resolve) => {
    worker.once('message', () => resolve())
    worker.postMessage('ping')
  })
  return { answered, ping, stop: () => worker.terminate() }
}

t.test('an answer that came while the event loop stalled past the timeout counts as ok', async (t) => {
  const dependency = answeringThread()
  t.teardown(dependency.stop)
  const timeoutMs = 5
  const failures: string[] = []
  const started = Date.now()
  const results = runProbes([{ name: 'db', check: dependency.ping }], timeoutMs, (name) => failures.push(name))
  // The stall: this thread blocks until the answer has been sent and the timeout has passed.
  t.equal(Atomics.wait(dependency.answered, 0, 0, 30_000), 'ok', 'the other thread answered')
  while (Date.now() - started <= timeoutMs * 4);
  t.same(await results, { db: 'ok' })
  t.same(failures, [])
})

t.test('a dependency that never answers is unavailable, with the reason passed on', async (t) => {
  const reasons: string[] = []
  const results = await runProbes([{ name: 'nats', check: () => new Promise<void>(() => {}) }], 5, (name, err) => reasons.push(`${name}: ${(err as Error).message}`))
  t.same(results, { nats: 'unavailable' })
  t.same(reasons, ['nats: no answer within 5 ms'])
})
