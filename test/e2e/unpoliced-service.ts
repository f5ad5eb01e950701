/**
 * TESTS ONLY: the service as `npm start` runs it, but composed with a planner
 * that applies no ffmpeg argument policy (run-ffmpeg-command and the warm
 * runners), so test/e2e/sandbox.test.ts can show what the sandbox holds on
 * its own. A composition root of its own under test/: the service's entry
 * point (api/main.ts) hands in no parts, and no variable or request can.
 */
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../../api/config.js'
import { createLogger } from '../../api/logger.js'
import { runRoles } from '../../api/main.js'
import { unpolicedPlanner } from './unpoliced-planner.js'

const config = loadConfig()
await runRoles(config, createLogger('ffkube', config.logLevel), {
  ffmpegPlanner: unpolicedPlanner,
  poolWorkerMain: fileURLToPath(new URL('./unpoliced-pool-worker.js', import.meta.url)),
})
