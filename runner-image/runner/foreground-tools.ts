/**
 * The warm runner's tools at the priority the runner started with, and the
 * runner's own work below it (local mode only: pool-worker.ts).
 *
 * Why: an encode keeps every core of a small host busy, and whatever the
 * runner does beside it (early stores, progress, logs) takes CPU it wanted;
 * on two cores each CPU second beside it cost it about half a second of wall
 * (docs/benchmarks/multi-file.md). Niced, the runner's work waits for the
 * moments the encode leaves a core idle, and the encode runs as if alone.
 *
 * How, without privileges: a process may raise its own nice value but never
 * lower it again (that needs CAP_SYS_NICE), and a child starts at the nice
 * value of the thread that forks it (on Linux nice is a thread's, not a
 * process's). So the tools are forked by a thread made before the runner
 * lowers its priority; that thread keeps the start value for good, and every
 * command's ffmpeg, ffprobe and yt-dlp start at it. It also reads their
 * stdout and stderr, so a tool never blocks on a pipe its niced runner has
 * not yet drained. The runner's other threads (the main one, V8's helpers)
 * are niced once, at start; threads made later inherit it from the main one.
 */
import { readdirSync, readlinkSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { runTool, type ToolOptions, type ToolRun } from '../../contracts/tool-process.js'

/** How much lower than at its start the runner's own work runs (10: a CFS weight of 110 against each of ffmpeg's threads' 1024). */
export const BACKGROUND_NICENESS = 10

/** Starts a tool: runTool's signature. */
export type ToolRunner = (program: string, args: readonly string[], options: ToolOptions) => Promise<ToolRun>

/** What the thread is asked: the options without the callbacks and the signal, which stay on this side. */
type ToolRequest =
  | { type: 'run'; id: number; program: string; args: readonly string[]; options: Pick<ToolOptions, 'cwd' | 'timeoutMs' | 'stderrLimit' | 'sandbox'>; stdout: boolean; stderr: boolean }
  | { type: 'abort'; id: number }

type ToolReply =
  | { type: 'ready'; tid: number }
  | { type: 'stdout'; id: number; chunk: string }
  | { type: 'stderr'; id: number; chunk: string }
  | { type: 'done'; id: number; run: ToolRun }
  | { type: 'failed'; id: number; message: string; code: string | undefined }

const ROLE = 'ffkube-tool-thread'

interface Pending {
  options: ToolOptions
  resolve(run: ToolRun): void
  reject(error: Error): void
  abort(): void
}

/** The tool thread, seen from the runner's main thread. */
export class ForegroundTools {
  readonly #pending = new Map<number, Pending>()
  #next = 0
  #stopped: Error | null = null

  private constructor(private readonly thread: Worker) {
    thread.on('message', (reply: ToolReply) => this.#receive(reply))
    thread.on('error', (error) => this.#stop(error))
    thread.on('exit', (code) => this.#stop(new Error(`the tool thread exited with ${code}`)))
  }

  /**
   * Makes the tool thread, then lowers every other thread of this process by
   * `niceness`. Resolves with the tool thread's id and the nice values.
   */
  static async start(niceness = BACKGROUND_NICENESS): Promise<{ tools: ForegroundTools; toolThread: number; from: number; to: number }> {
    const thread = new Worker(new URL(import.meta.url), { workerData: { role: ROLE } })
    // The runner's lifetime is its stdin's; this thread must not hold it open.
    thread.unref()
    const toolThread = await new Promise<number>((resolve, reject) => {
      thread.once('error', reject)
      thread.once('message', (reply: ToolReply) => (reply.type === 'ready' ? resolve(reply.tid) : reject(new Error(`the tool thread said ${reply.type} first`))))
    })
    const from = getPriority(0)
    const to = Math.min(from + niceness, 19)
    for (const tid of readdirSync('/proc/self/task').map(Number)) {
      if (tid === toolThread) continue
      try {
        setPriority(tid, to)
      } catch {
        // A thread that ended meanwhile, or a host that refuses: that thread keeps the start value, as before.
      }
    }
    return { tools: new ForegroundTools(thread), toolThread, from, to }
  }

  /** runTool, from the tool thread. */
  readonly runTool: ToolRunner = (program, args, options) => {
    if (this.#stopped) return Promise.reject(this.#stopped)
    const id = this.#next++
    return new Promise<ToolRun>((resolve, reject) => {
      const abort = () => this.thread.postMessage({ type: 'abort', id } satisfies ToolRequest)
      this.#pending.set(id, { options, resolve, reject, abort })
      const { cwd, timeoutMs, stderrLimit, sandbox, signal } = options
      const plain = { cwd, timeoutMs, ...(stderrLimit === undefined ? {} : { stderrLimit }), ...(sandbox === undefined ? {} : { sandbox }) }
      this.thread.postMessage({ type: 'run', id, program, args, options: plain, stdout: options.onStdout !== undefined, stderr: options.onStderr !== undefined } satisfies ToolRequest)
      if (signal?.aborted) abort()
      signal?.addEventListener('abort', abort, { once: true })
    })
  }

  #receive(reply: ToolReply): void {
    if (reply.type === 'ready') return
    const pending = this.#pending.get(reply.id)
    if (!pending) return
    if (reply.type === 'stdout' || reply.type === 'stderr') {
      ;(reply.type === 'stdout' ? pending.options.onStdout : pending.options.onStderr)?.(reply.chunk)
      return
    }
    this.#pending.delete(reply.id)
    pending.options.signal?.removeEventListener('abort', pending.abort)
    if (reply.type === 'done') pending.resolve(reply.run)
    else pending.reject(Object.assign(new Error(reply.message), reply.code ? { code: reply.code } : {}))
  }

  #stop(error: Error): void {
    this.#stopped ??= error
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id)
      pending.reject(error)
    }
  }
}

/** The thread's side: runs each tool it is asked for and sends back its output and end. */
function serveTools(port: NonNullable<typeof parentPort>): void {
  const aborts = new Map<number, AbortController>()
  port.on('message', (request: ToolRequest) => {
    if (request.type === 'abort') {
      aborts.get(request.id)?.abort()
      return
    }
    const { id } = request
    const controller = new AbortController()
    aborts.set(id, controller)
    const send = (reply: ToolReply) => port.postMessage(reply)
    void runTool(request.program, request.args, {
      ...request.options,
      signal: controller.signal,
      ...(request.stdout ? { onStdout: (chunk: string) => send({ type: 'stdout', id, chunk }) } : {}),
      ...(request.stderr ? { onStderr: (chunk: string) => send({ type: 'stderr', id, chunk }) } : {}),
    }).then(
      (run) => send({ type: 'done', id, run }),
      (error: unknown) => send({ type: 'failed', id, message: error instanceof Error ? error.message : String(error), code: (error as { code?: string } | null)?.code }),
    ).finally(() => aborts.delete(id))
  })
  // "PID/task/TID": this thread's own id, which the main thread leaves at the start value.
  port.postMessage({ type: 'ready', tid: Number(readlinkSync('/proc/thread-self').split('/').at(-1)) } satisfies ToolReply)
}

if (!isMainThread && parentPort && (workerData as { role?: unknown } | null)?.role === ROLE) serveTools(parentPort)
