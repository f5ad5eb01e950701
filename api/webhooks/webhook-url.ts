import { checkUrl } from '../../contracts/url-guard.js'
import { ValidationError } from '../errors/api-errors.js'

/** Not shown in the spec: the bound every URL field of the API has. */
const MAX_WEBHOOK_URL_LENGTH = 4096

/**
 * The one rule for a webhook URL, the account's (`PUT /webhook-config`, field
 * `url`) and a command's (`webhook_url`): an absolute http(s) URL without
 * credentials, spaces or control characters, and not a literal non-public IP
 * address unless ALLOW_PRIVATE_NETWORKS. Host names are judged after DNS, on
 * every delivery. 422 on every endpoint, as the spec lists.
 */
export function validateWebhookUrl(raw: string, allowPrivateNetworks: boolean, field = 'url'): string {
  const verdict = checkUrl(raw, { allowPrivateNetworks })
  if (!verdict.ok) throw new ValidationError(`${field}: ${verdict.reason}`)
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new ValidationError(`${field}: must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`)
  // The URL parser drops tabs and newlines and escapes the rest, so the URL it reads is not the one sent.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f]/.test(raw)) throw new ValidationError(`${field}: must not contain spaces or control characters`)
  return verdict.url.href
}
