/**
 * How the Job's upload container learns that its run container is done, when
 * the two start together (operator/job-builder.ts says why they do: the
 * kubelet notices a container's exit only at its next relist, up to a second).
 *
 * The record is the phase state (phase-state.ts): the run process writes
 * `ran` or `failed` there before it exits. What the file alone cannot say is
 * that the run process died without writing it (OOM kill, a crash), so the run
 * process also listens on a Unix socket in the work volume for as long as it
 * lives; the upload process stays connected to it, and the kernel closes that
 * connection the moment the run process ends, however it ends. No heartbeat,
 * no timeout on a live run. Only a run process that never starts is bounded by
 * time (RUN_START_LIMIT_MS), and the Job's deadline bounds everything.
 *
 * A refused connection means the run process is gone, so the socket appears
 * at its path only once it listens: bound under a staging name, then renamed.
 * Bound at the path itself, a run process descheduled between bind() and
 * listen() refused the upload process's look, which took it for dead: a
 * command lost under load (bench/runner-pod-cpu.ts saw it at load 15).
 *
 * The socket carries no data towards the upload process: a process in the run
 * container that connects to it learns nothing, and the upload process trusts
 * only the state file. The other way, a pod's yt-dlp command gets the one
 * message the upload process sends as it connects: the account's cookies.txt
 * (cookie-greeting.ts), before the fetch starts and so before any ffmpeg.
 */
import { mkdir, rename, rm } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { greetingFrame, readGreeting } from './cookie-greeting.js'
import { STATE_DIR, readPhaseStateIfAny, type PhaseState } from './phase-state.js'

const SOCKET_FILE = 'run.sock'
/** How often the upload process looks for a run process that has not started listening yet. */
const LOOK_INTERVAL_MS = 25
/**
 * How long the upload process waits for a run process that never appears. The
 * kubelet starts the run container before the upload container in the same
 * sync (it is listed first), so this covers the run process's own start only.
 */
export const RUN_START_LIMIT_MS = 120_000

export type HandOver =
  | { kind: 'ran'; state: PhaseState }
  /** The run process reported its failure itself; nothing to upload. */
  | { kind: 'failed' }
  /** The run process ended, or never came, without a record: the pod's status says why. */
  | { kind: 'lost'; reason: string }

function socketPath(workDir: string): string {
  return join(workDir, STATE_DIR, SOCKET_FILE)
}

/** The run process's side of the socket. */
export interface RunPresence {
  /** Call only after the state says `ran` or `failed`. */
  close(): Promise<void>
  /** With `greeting`: what the first connection that sends a frame sends (cookie-greeting.ts); else null at once. */
  greeting: Promise<string | null>
}

/** Marks the run process as alive until close(); with `greeting`, also takes the upload process's one message. */
export async function announceRun(workDir: string, options: { greeting?: boolean } = {}): Promise<RunPresence> {
  const path = socketPath(workDir)
  const staging = `${path}.${process.pid}`
  await mkdir(join(workDir, STATE_DIR), { recursive: true, mode: 0o700 })
  // Left only by a run process killed before it could rename it; a new one must be able to listen.
  await rm(staging, { force: true })
  let greeted: (text: string) => void = () => undefined
  const greeting = options.greeting ? new Promise<string>((resolve) => (greeted = resolve)) : Promise.resolve(null)
  const server: Server = createServer((socket) => {
    // Nothing is written; an error (the peer gone) is not ours to report.
    socket.on('error', () => undefined)
    // A connection that closes without a frame leaves the greeting to the next one.
    if (options.greeting) readGreeting(socket).then(greeted, () => undefined)
    open.add(socket)
    socket.on('close', () => open.delete(socket))
  })
  const open = new Set<Socket>()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(staging, () => resolve())
  })
  // Atomic, and over a socket a killed run process left: the path never names a socket nobody listens on yet.
  await rename(staging, path)
  return {
    greeting,
    close: async () => {
      // Unlinked before the listener closes, so a late look finds no socket (ENOENT), never a refusing one;
      // the connections stay up until ended here, which tells the upload process at once.
      await rm(path, { force: true })
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of open) socket.destroy()
      })
    },
  }
}

/** `busy`: the run process listens but its backlog is full (EAGAIN), so it is alive: look again. */
type Link = { kind: 'connected'; closed: Promise<void> } | { kind: 'absent' } | { kind: 'busy' } | { kind: 'refused' }

function link(path: string, greeting: string | null): Promise<Link> {
  return new Promise((resolve) => {
    const socket = connect(path)
    socket.once('connect', () => {
      if (greeting !== null) socket.write(greetingFrame(greeting))
      const closed = new Promise<void>((done) => socket.once('close', () => done()))
      socket.on('error', () => undefined)
      resolve({ kind: 'connected', closed })
    })
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.destroy()
      resolve(error.code === 'ENOENT' ? { kind: 'absent' } : error.code === 'EAGAIN' ? { kind: 'busy' } : { kind: 'refused' })
    })
  })
}

function settled(state: PhaseState | null): HandOver | null {
  if (state?.failed) return { kind: 'failed' }
  if (state?.ran) return { kind: 'ran', state }
  return null
}

/**
 * Waits until the run process has handed over, failed, or is known gone.
 * `greeting`: sent to the run process as this connects (a pod's yt-dlp cookies, or '' for none).
 */
export async function awaitHandOver(workDir: string, commandId: string, greeting: string | null = null): Promise<HandOver> {
  const path = socketPath(workDir)
  const started = performance.now()
  for (;;) {
    const earlier = await readPhaseStateIfAny(workDir, commandId)
    const before = settled(earlier)
    if (before) return before
    const seen = await link(path, greeting)
    if (seen.kind === 'connected') await seen.closed
    // The run process writes its record before it stops listening, so what the file says now is final unless it never came.
    const state = await readPhaseStateIfAny(workDir, commandId)
    const after = settled(state)
    if (after) return after
    if (seen.kind === 'connected' || seen.kind === 'refused') return { kind: 'lost', reason: 'the run process ended without handing over' }
    // The run process listens before it fetches: a record there before this look, and no socket at it, means none
    // is coming. A record that came after the look says nothing (this process may have slept through the fetch).
    if (earlier && seen.kind === 'absent') return { kind: 'lost', reason: 'the fetch phase ran, but no run process is there' }
    if (seen.kind === 'absent' && performance.now() - started > RUN_START_LIMIT_MS) return { kind: 'lost', reason: `no run process started within ${RUN_START_LIMIT_MS / 1000} s` }
    await sleep(LOOK_INTERVAL_MS)
  }
}
