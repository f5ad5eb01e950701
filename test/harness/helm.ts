/** helm, as scripts/provision.sh builds it, and the chart rendered into objects. */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { loadAllYaml, type KubernetesObject } from '@kubernetes/client-node'
import { toolCacheDir } from '../../api/local/tools.js'
import { backgroundLaneDone } from './background-lanes.js'
import { scratchDir, type Teardown } from './scratch.js'

const run = promisify(execFile)

/** The chart in this checkout. */
export const CHART_DIR = 'charts/ffkube'
/** The Kubernetes version of the harness apiserver (scripts/provision.sh KUBE_VERSION): what the chart renders for. */
export const KUBE_VERSION = 'v1.36.3'

/** Absolute path of the provisioned helm (not in api/local/tools.ts: only tests use it). */
export function helmPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(toolCacheDir(env), 'bin', 'helm')
}

export interface Helm {
  /** Runs helm; resolves with stdout, rejects with an error carrying stderr. */
  run(args: string[]): Promise<string>
  /** `helm template` of the chart, parsed into objects (empty documents dropped). */
  template(options?: TemplateOptions): Promise<KubernetesObject[]>
}

export interface TemplateOptions {
  release?: string
  namespace?: string
  valuesFiles?: string[]
  /** --set-json pairs, e.g. {'secrets.mongodbUrl': '"mongodb://db:27017"'} */
  setJson?: Record<string, string>
}

/**
 * A helm with its config, cache and data folders in a scratch directory, so
 * tests neither read nor write the user's ~/.config/helm.
 */
export async function startHelm(t: Teardown): Promise<Helm> {
  await backgroundLaneDone('go-tools')
  const path = helmPath()
  if (!existsSync(path)) throw new Error(`helm is not provisioned at ${path}: run scripts/provision.sh test`)
  const home = await scratchDir(t, 'ffkube-helm-')
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_DATA_HOME: join(home, 'data'),
  }
  const helm = async (args: string[]): Promise<string> => {
    try {
      const { stdout } = await run(path, args, { env, maxBuffer: 64 * 1024 * 1024 })
      return stdout
    } catch (err) {
      const { stderr, stdout } = err as { stderr?: string; stdout?: string }
      throw new Error(`helm ${args.join(' ')} failed: ${stderr || stdout || String(err)}`)
    }
  }
  return {
    run: helm,
    async template(options = {}) {
      const args = [
        'template', options.release ?? 'ffkube', CHART_DIR,
        '--namespace', options.namespace ?? 'ffkube',
        '--kube-version', KUBE_VERSION,
      ]
      for (const file of options.valuesFiles ?? []) args.push('--values', file)
      for (const [key, value] of Object.entries(options.setJson ?? {})) args.push('--set-json', `${key}=${value}`)
      const objects = loadAllYaml(await helm(args)) as Array<KubernetesObject | null>
      return objects.filter((o): o is KubernetesObject => o !== null && typeof o === 'object')
    },
  }
}

/** The one object of this kind and name; throws naming what is missing. */
export function findObject<T extends KubernetesObject>(objects: KubernetesObject[], kind: string, name: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name)
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata?.name}`).join(', ')}`)
  return found as T
}
