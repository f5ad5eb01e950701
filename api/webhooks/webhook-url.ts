import { checkUrl } from '../../contracts/url-guard.js'
import { urlProblem } from '../commands/validation.js'
import { ValidationError } from '../errors/api-errors.js'

/**
 * The one rule for a webhook URL, the account's (`PUT /webhook-config`, field
 * `url`) and a command's (`webhook_url`): an absolute http(s) URL without
 * credentials, spaces or control characters (every URL field's rule), and not
 * a literal non-public IP address unless ALLOW_PRIVATE_NETWORKS. Host names
 * are judged after DNS, on every delivery. 422 on every endpoint, as the spec
 * lists.
 */
export function validateWebhookUrl(raw: string, allowPrivateNetworks: boolean, field = 'url'): string {
  const verdict = checkUrl(raw, { allowPrivateNetworks })
  if (!verdict.ok) throw new ValidationError(`${field}: ${verdict.reason}`)
  const problem = urlProblem(raw)
  if (problem) throw new ValidationError(`${field}: ${problem}`)
  return verdict.url.href
}
