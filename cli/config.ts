/**
 * Where the CLI finds the service and its key: FFKUBE_URL and FFKUBE_API_KEY,
 * else the config file ($XDG_CONFIG_HOME/ffkube/config.json, by default
 * ~/.config/ffkube/config.json) that `ffkube config set` writes. The
 * environment wins, key by key.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { UsageError } from './errors.js'

/** The config file's contents; unknown keys are kept as they are. */
export interface ConfigFile {
  url?: string
  api_key?: string
  [key: string]: unknown
}

/** Where a setting came from, for `ffkube config show`. */
export type ConfigSource = 'FFKUBE_URL' | 'FFKUBE_API_KEY' | 'config file' | 'unset'

export interface ResolvedConfig {
  url: string | null
  apiKey: string | null
  sources: { url: ConfigSource; apiKey: ConfigSource }
  path: string
}

/** The names `ffkube config set` takes, and the file's key for each. */
export const CONFIG_KEYS = { url: 'url', 'api-key': 'api_key' } as const
export type ConfigKey = keyof typeof CONFIG_KEYS

/** The config file's path for an environment. Pure. */
export function configPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, '.config') : null)
  if (!base) throw new UsageError('cannot place the config file: neither XDG_CONFIG_HOME nor HOME is set; use FFKUBE_URL and FFKUBE_API_KEY')
  return join(base, 'ffkube', 'config.json')
}

/** The environment over the file, key by key. Pure. */
export function resolveConfig(env: NodeJS.ProcessEnv, file: ConfigFile | null, path: string): ResolvedConfig {
  const fromFile = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null)
  const url = env.FFKUBE_URL || fromFile(file?.url)
  const apiKey = env.FFKUBE_API_KEY || fromFile(file?.api_key)
  return {
    url: url ?? null,
    apiKey: apiKey ?? null,
    sources: {
      url: env.FFKUBE_URL ? 'FFKUBE_URL' : url ? 'config file' : 'unset',
      apiKey: env.FFKUBE_API_KEY ? 'FFKUBE_API_KEY' : apiKey ? 'config file' : 'unset',
    },
    path,
  }
}

/** The file, or null when there is none; a file that is not a JSON object is a usage error naming it. */
export async function readConfigFile(path: string): Promise<ConfigFile | null> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new UsageError(`${path} is not valid JSON; fix it or remove it and run \`ffkube config set\` again`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError(`${path} must hold a JSON object`)
  return parsed as ConfigFile
}

/** Loads the configuration for this process. */
export async function loadConfig(env: NodeJS.ProcessEnv): Promise<ResolvedConfig> {
  const path = configPath(env)
  return resolveConfig(env, await readConfigFile(path), path)
}

/** A URL the CLI can call: http(s), no credentials, no query. */
export function checkServiceUrl(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new UsageError(`the service URL "${raw}" is not a URL; it looks like http://127.0.0.1:8080`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`the service URL must be http or https, got ${url.protocol}`)
  if (url.search || url.hash) throw new UsageError('the service URL takes no query or fragment')
  return raw.replace(/\/+$/, '')
}

/** Sets one key in the file, readable by the user alone (it holds the API key); written whole, then renamed into place. */
export async function setConfigValue(path: string, key: ConfigKey, value: string): Promise<void> {
  const file = (await readConfigFile(path)) ?? {}
  file[CONFIG_KEYS[key]] = key === 'url' ? checkServiceUrl(value) : value
  await mkdir(dirname(path), { recursive: true, mode: 0o700 })
  const temporary = `${path}.${process.pid}.tmp`
  await writeFile(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 })
  await rename(temporary, path)
}
