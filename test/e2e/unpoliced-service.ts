/**
 * TESTS ONLY: the service as `npm start` runs it, but with the ffmpeg
 * argument policy turned off (run-ffmpeg-command and the runners), so
 * test/e2e/sandbox.test.ts can show what the sandbox holds on its own. A
 * separate entry point under test/, so no variable or request of the real
 * one (api/main.ts) can turn the policy off.
 */
import { loadConfig } from '../../api/config.js'
import { createLogger } from '../../api/logger.js'
import { runRoles } from '../../api/main.js'

const config = loadConfig()
await runRoles(config, createLogger('ffkube', config.logLevel), { unsafeDisableFfmpegPolicyForTests: true })
