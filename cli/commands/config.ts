/** `ffkube config set|show`: the config file that FFKUBE_URL and FFKUBE_API_KEY override. */
import { CONFIG_KEYS, setConfigValue, type ConfigKey } from '../config.js'
import type { CliContext } from '../context.js'
import { EXIT, UsageError } from '../errors.js'
import { table } from '../format.js'

/** `ffsk_1234…cdef`: enough to tell keys apart, not enough to use one. */
export function maskKey(key: string): string {
  return key.length <= 16 ? '****' : `${key.slice(0, 9)}…${key.slice(-4)}`
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8').trim()
}

export async function setConfigAction(context: CliContext, key: string, value: string): Promise<number> {
  if (!Object.hasOwn(CONFIG_KEYS, key)) throw new UsageError(`config keys: ${Object.keys(CONFIG_KEYS).join(', ')}; got "${key}"`)
  // `-`: read the value from stdin, so a key stays out of the shell history.
  const resolved = value === '-' ? await readStdin() : value
  if (resolved === '') throw new UsageError(`config set ${key}: the value is empty`)
  const { path } = await context.config()
  await setConfigValue(path, key as ConfigKey, resolved)
  context.out(`${key} saved in ${path}\n`)
  return EXIT.OK
}

export async function showConfigAction(context: CliContext): Promise<number> {
  const config = await context.config()
  context.out(
    table([
      ['file', config.path],
      ['url', `${config.url ?? '(unset)'}  [${config.sources.url}]`],
      ['api-key', `${config.apiKey === null ? '(unset)' : maskKey(config.apiKey)}  [${config.sources.apiKey}]`],
    ]),
  )
  return EXIT.OK
}
