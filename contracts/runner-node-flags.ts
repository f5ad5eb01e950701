/**
 * The node flags every runner process starts with (the runner image's
 * containers, and under local mode's own flags the pool's workers and the
 * one-shot runner). The runner sits beside ffmpeg and only moves bytes and
 * messages, so it keeps V8's young generation small:
 *   --max-semi-space-size=1  a 1 MiB young generation instead of 16 (it is
 *                            mostly empty between a command's chunks).
 * operator/config.ts, the chart's runners.command and runner-image/Dockerfile
 * spell the same list (test/chart/dockerfiles.test.ts checks).
 *
 * `--lite-mode` (no optimising compiler, lazy feedback, smaller code) is local
 * mode's only (LOCAL_ONLY_FLAGS). A pod's runner is a process per container
 * per command, mostly start-up: Node's own modules (tls, crypto, http,
 * worker_threads …) and the bundle load, and under lite mode that cost more
 * CPU (nine builtins: 53 ms without it, 72 with it) for 1.5 MiB less peak
 * RSS in the fetch-run process (docs/benchmarks/throughput.md, "Node's flags
 * in the pod").
 *
 * `--no-expose-wasm` is not in it: the image's Node 24 (V8 13) no longer knows
 * that flag and exits 9 ("bad option") on it, which the cluster lane found (every
 * runner container failed at once). Older V8s warn that --lite-mode disables
 * --expose-wasm unless told, so local mode adds it there (localRunnerNodeFlags).
 */
export const RUNNER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1']

/**
 * Local mode's warm worker lives for many commands, where lite mode's smaller
 * code and lazy feedback pay: measured with bench/local-mode.ts, a warm worker
 * peaked at 106 MiB with node's defaults and 63 MiB with these and RUNNER_NODE_FLAGS.
 */
const LOCAL_ONLY_FLAGS: readonly string[] = ['--lite-mode']

/**
 * What local mode adds for its warm workers, which run command after command
 * in one process (a pod's runner runs one): an old generation that starts at
 * 24 MiB. With V8's default start, just above what the worker keeps alive,
 * the garbage each command promotes out of the 1 MiB young generation (the
 * bytes it moves, 64 KiB at a time, over two sockets and two files) filled it
 * about once per command, and each time the worker marked and compacted its
 * whole heap: 50 to 95 full collections per worker in a 100-command burst,
 * ~30 % of its CPU. With 24 MiB, 10 to 15, the worker's CPU per remux 85–92
 * → 61–63 ms, and its peak RSS within the run-to-run spread (70–72 MiB
 * against 68–77). 32 and 48 MiB saved no more and cost 4–5 MiB of RSS.
 * Measured with bench/local-mode.ts and a `gc` PerformanceObserver in the worker.
 */
const WARM_WORKER_FLAGS: readonly string[] = ['--initial-old-space-size=24']

/**
 * The flags for a runner started by this node (local mode): RUNNER_NODE_FLAGS,
 * LOCAL_ONLY_FLAGS and WARM_WORKER_FLAGS, plus `--no-expose-wasm` on a V8 older than 12, whose
 * warning it silences. V8 12 (Node 22) is left without it: a warning at
 * worst, never a refusal.
 */
export function localRunnerNodeFlags(v8Version: string = process.versions.v8): string[] {
  const major = Number(v8Version.split('.')[0])
  const flags = [...RUNNER_NODE_FLAGS, ...LOCAL_ONLY_FLAGS, ...WARM_WORKER_FLAGS]
  return major < 12 ? [...flags, '--no-expose-wasm'] : flags
}
