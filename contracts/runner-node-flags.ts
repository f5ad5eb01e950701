/**
 * The node flags every runner process starts with (the local pool's workers,
 * the one-shot runner, the runner image's containers). The runner sits beside
 * ffmpeg and only moves bytes and messages, so it trades V8's optimising
 * compiler for memory: measured with bench/local-mode.ts, a warm worker peaked
 * at 106 MiB with node's defaults and 63 MiB with these.
 *   --max-semi-space-size=1  a 1 MiB young generation instead of 16 (it is
 *                            mostly empty between a command's chunks);
 *   --lite-mode              no optimising compiler, lazy feedback, smaller
 *                            code (implies --jitless: no WebAssembly, which
 *                            nothing in the runner uses);
 *   --no-expose-wasm         says so, which silences V8's warning about it.
 * operator/config.ts, the chart's runners.command and runner-image/Dockerfile
 * spell the same list (test/chart/dockerfiles.test.ts checks).
 */
export const RUNNER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--lite-mode', '--no-expose-wasm']
