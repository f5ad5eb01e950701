import { checkUrl } from '../../contracts/url-guard.js'
import { ValidationError } from '../errors/api-errors.js'

/**
 * The webhook `url` a client configures: an absolute http(s) URL without
 * credentials, and not a literal non-public IP address unless
 * ALLOW_PRIVATE_NETWORKS. Host names are judged after DNS, on every delivery.
 */
export function validateWebhookUrl(raw: string, allowPrivateNetworks: boolean): string {
  const verdict = checkUrl(raw, { allowPrivateNetworks })
  if (!verdict.ok) throw new ValidationError(`url: ${verdict.reason}`)
  return verdict.url.href
}
