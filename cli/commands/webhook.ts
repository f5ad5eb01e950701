/** `ffkube webhook get|set|delete`: the account-level webhook (/webhook-config). */
import { expectData } from '../../client/index.js'
import type { CliContext } from '../context.js'
import { EXIT } from '../errors.js'
import { table } from '../format.js'

export async function getWebhookAction(context: CliContext, options: { json: boolean }): Promise<number> {
  const { client } = await context.connect()
  const config = expectData(await client.GET('/api/v1/webhook-config', { signal: context.signal }))
  if (options.json) {
    context.out(`${JSON.stringify(config, null, 2)}\n`)
    return EXIT.OK
  }
  context.out(
    table([
      ['url', config.url],
      ['active', config.is_active ? 'yes' : `no${config.disabled_at ? ` (disabled ${config.disabled_at})` : ''}`],
      ['signed', config.has_secret ? 'yes (X-Webhook-Signature)' : 'no'],
      ['failures', String(config.consecutive_failures)],
    ]),
  )
  return EXIT.OK
}

export async function setWebhookAction(context: CliContext, url: string, options: { secret?: string }): Promise<number> {
  const { client } = await context.connect()
  const body = { url, ...(options.secret === undefined ? {} : { secret: options.secret }) }
  const answer = expectData(await client.PUT('/api/v1/webhook-config', { body, signal: context.signal }))
  context.out(`webhook set: ${answer.url}${options.secret === undefined ? '' : ' (signed)'}\n`)
  return EXIT.OK
}

export async function deleteWebhookAction(context: CliContext): Promise<number> {
  const { client } = await context.connect()
  expectData(await client.DELETE('/api/v1/webhook-config', { signal: context.signal }))
  context.out('webhook deactivated (its configuration is kept; `ffkube webhook set` turns it on again)\n')
  return EXIT.OK
}
