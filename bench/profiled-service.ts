/**
 * BENCH ONLY: the service as `npm start` runs it, profiling itself and its
 * warm runners in windows (bench/cpu-profile-windows.ts) into
 * BENCH_PROFILE_DIR. bench/multi-file.ts starts it instead of dist/api/main.js
 * when that variable is set.
 */
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../api/config.js'
import { createLogger } from '../api/logger.js'
import { runRoles } from '../api/main.js'
import { profileInWindows } from './cpu-profile-windows.js'

const dir = process.env.BENCH_PROFILE_DIR as string
await profileInWindows(dir, 'service')
const config = loadConfig()
await runRoles(config, createLogger('ffkube', config.logLevel), {
  poolWorkerMain: fileURLToPath(new URL('./profiled-pool-worker.js', import.meta.url)),
})
