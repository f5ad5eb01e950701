/**
 * The hand-over between the Job's two containers (runner-image/runner/hand-over.ts):
 * the upload process waits for the run process's record, and learns from the
 * kernel, not from a clock, when the run process died without one.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdir } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { announceRun, awaitHandOver } from '../../runner-image/runner/hand-over.js'
import { initialState, writeFailedState, writePhaseState } from '../../runner-image/runner/phase-state.js'
import { scratchDir } from '../harness/scratch.js'
import type { Teardown } from '../harness/scratch.js'

// npm test builds with tsc before tap runs; the run process here is a real other process, as in a pod.
const HAND_OVER = pathToFileURL(join(process.cwd(), 'dist/runner-image/runner/hand-over.js')).href
const ID = 'cmd-hand-over'
const ran = { runSeconds: 0.5, metas: {} }

async function workDir(t: Teardown): Promise<string> {
  const dir = join(await scratchDir(t, 'ffkube-hand-over-'), 'work')
  await mkdir(dir)
  return dir
}

/** Another process that announces a run in `dir` and then does nothing until it is killed. */
async function runProcess(t: Teardown, dir: string) {
  const script = `const { announceRun } = await import(${JSON.stringify(HAND_OVER)}); await announceRun(${JSON.stringify(dir)}); console.log('listening'); setInterval(() => {}, 60_000)`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => child.kill('SIGKILL'))
  const [line] = (await once(child.stdout, 'data')) as [Buffer]
  if (line.toString('utf8').trim() !== 'listening') throw new Error(`the run process said ${line.toString('utf8')}`)
  return child
}

t.test('the upload process gets the record once the run process has written it and ended', async (t) => {
  const dir = await workDir(t)
  const presence = await announceRun(dir)
  const waiting = awaitHandOver(dir, ID)
  await writePhaseState(dir, { ...initialState(ID), fetched: { downloads: null, failedFiles: null }, ran })
  await presence.close()
  t.match(await waiting, { kind: 'ran', state: { commandId: ID, ran } })
})

t.test('an upload process that starts before the run process waits for it', async (t) => {
  const dir = await workDir(t)
  const waiting = awaitHandOver(dir, ID)
  const presence = await announceRun(dir)
  await writePhaseState(dir, { ...initialState(ID), fetched: { downloads: null, failedFiles: null }, ran })
  await presence.close()
  t.match(await waiting, { kind: 'ran' })
})

t.test('a run that failed and reported it ends the wait with nothing to upload', async (t) => {
  const dir = await workDir(t)
  const presence = await announceRun(dir)
  const waiting = awaitHandOver(dir, ID)
  await writeFailedState(dir, ID)
  await presence.close()
  t.same(await waiting, { kind: 'failed' })
})

t.test('a run process killed mid-run (SIGKILL, as an OOM kill) is known lost, with no record and no timeout', async (t) => {
  const dir = await workDir(t)
  const child = await runProcess(t, dir)
  await writePhaseState(dir, { ...initialState(ID), fetched: { downloads: null, failedFiles: null } })
  const waiting = awaitHandOver(dir, ID)
  child.kill('SIGKILL')
  t.match(await waiting, { kind: 'lost', reason: /ended without handing over/ })
})

t.test('an upload process that starts after the run process died finds it lost (its socket refuses)', async (t) => {
  const dir = await workDir(t)
  const child = await runProcess(t, dir)
  child.kill('SIGKILL')
  await once(child, 'exit')
  t.match(await awaitHandOver(dir, ID), { kind: 'lost' })
})

t.test("a run process's socket never refuses while it lives: it appears at its path only once listening", async (t) => {
  // A refusal means "the run process is gone" to the upload process. Another process announces and
  // closes 300 times while this one looks as fast as it can; bound at the path itself, looks landed
  // between bind() and listen() and were refused (160 of ~3,400 looks in 500 rounds).
  const dir = await workDir(t)
  const script = `const { announceRun } = await import(${JSON.stringify(HAND_OVER)}); for (let i = 0; i < 300; i++) await (await announceRun(${JSON.stringify(dir)})).close()`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' })
  t.teardown(() => child.kill('SIGKILL'))
  let exited = false
  const exit = once(child, 'exit').then(([code]) => ((exited = true), code))
  const looks: Record<string, number> = {}
  const path = join(dir, '.ffkube', 'run.sock')
  while (!exited) {
    const seen = await new Promise<string>((resolve) => {
      const socket = connect(path)
      socket.once('connect', () => (socket.destroy(), resolve('connected')))
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    })
    looks[seen] = (looks[seen] ?? 0) + 1
  }
  t.equal(await exit, 0, 'the announcing process ran its 300 rounds')
  t.ok((looks.connected ?? 0) > 0, `some looks found it listening: ${JSON.stringify(looks)}`)
  t.equal(looks.ECONNREFUSED ?? 0, 0, `no look was refused: ${JSON.stringify(looks)}`)
})

t.test('a fetch record with no run process listening is known lost at once', async (t) => {
  const dir = await workDir(t)
  await writePhaseState(dir, { ...initialState(ID), fetched: { downloads: null, failedFiles: null } })
  t.match(await awaitHandOver(dir, ID), { kind: 'lost', reason: /no run process is there/ })
})

t.test('a record of another command is refused, never uploaded from', async (t) => {
  const dir = await workDir(t)
  await writePhaseState(dir, { ...initialState('someone-else'), fetched: { downloads: null, failedFiles: null }, ran })
  await t.rejects(awaitHandOver(dir, ID), /record of another command/)
})

t.test("a pod's yt-dlp cookies: the upload process's one message reaches the run process as it connects, whole", async (t) => {
  for (const text of ['# Netscape HTTP Cookie File\n.example.com\tTRUE\t/\tTRUE\t0\tsid\tvälue\n'.repeat(2000), '']) {
    const dir = await workDir(t)
    const presence = await announceRun(dir, { greeting: true })
    const waiting = awaitHandOver(dir, ID, text)
    t.equal(await presence.greeting, text, `${Buffer.byteLength(text)} bytes, as sent`)
    await writeFailedState(dir, ID)
    await presence.close()
    t.same(await waiting, { kind: 'failed' })
  }
})

t.test('a connection that closes before a whole message leaves the greeting to the next one', async (t) => {
  const dir = await workDir(t)
  const presence = await announceRun(dir, { greeting: true })
  const { connect } = await import('node:net')
  const early = connect(join(dir, '.ffkube', 'run.sock'))
  await once(early, 'connect')
  early.end('100\nonly part')
  await once(early, 'close')
  const waiting = awaitHandOver(dir, ID, 'the real one')
  t.equal(await presence.greeting, 'the real one')
  await writeFailedState(dir, ID)
  await presence.close()
  await waiting
})

t.test('without a greeting asked for, the run process answers null at once', async (t) => {
  const presence = await announceRun(await workDir(t))
  t.equal(await presence.greeting, null)
  await presence.close()
})
