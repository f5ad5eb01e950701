/**
 * The webhook deliverer as its own process: `FFKUBE_ROLES=webhooks`, never
 * starting servers locally. Needs MONGODB_URL, NATS_URL and ENCRYPTION_KEYS
 * (the API's, to open signing secrets); serves /healthz and /readyz on PORT;
 * SIGINT/SIGTERM stop it after attempts in flight are cut short.
 */
import { ConfigError, loadConfig, requireExternalServices } from '../config.js'
import { createLogger } from '../logger.js'
import { runService } from '../service.js'

async function main(): Promise<void> {
  try {
    const config = requireExternalServices({ ...loadConfig(), roles: ['webhooks'] }, 'the webhook deliverer')
    await runService(config, createLogger('ffkube-webhook-deliverer', config.logLevel), { localServices: false })
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`ffkube-webhook-deliverer: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`ffkube-webhook-deliverer failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
