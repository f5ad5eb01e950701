/**
 * TESTS ONLY: the warm runner (runner-image/runner/pool-worker.ts) with the
 * unpoliced planner, started by test/e2e/unpoliced-service.ts's local executor.
 */
import { runPoolWorker } from '../../runner-image/runner/pool-worker.js'
import { unpolicedPlanner } from './unpoliced-planner.js'

await runPoolWorker({ ffmpegPlanner: unpolicedPlanner })
