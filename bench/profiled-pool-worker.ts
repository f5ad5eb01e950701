/**
 * BENCH ONLY: the warm runner (runner-image/runner/pool-worker.ts), profiling
 * itself in windows (bench/cpu-profile-windows.ts); started by
 * bench/profiled-service.ts. A runner's environment is the service's choice
 * (api/executors/runner-environment.ts), so the directory is read from the
 * service's own environment.
 */
import { readFileSync } from 'node:fs'
import { runPoolWorker } from '../runner-image/runner/pool-worker.js'
import { profileInWindows } from './cpu-profile-windows.js'

const serviceEnvironment = readFileSync(`/proc/${process.ppid}/environ`, 'utf8').split('\0')
const dir = serviceEnvironment.find((entry) => entry.startsWith('BENCH_PROFILE_DIR='))?.slice('BENCH_PROFILE_DIR='.length)
if (!dir) throw new Error('the service that started this worker has no BENCH_PROFILE_DIR')
await profileInWindows(dir, 'runner')
await runPoolWorker()
