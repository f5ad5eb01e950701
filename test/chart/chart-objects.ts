/** Reading the chart's rendered objects the way a kubelet and the programs would. */
import type { KubernetesObject, V1Container, V1Deployment, V1EnvVar, V1Secret } from '@kubernetes/client-node'
import { findObject } from '../harness/helm.js'

export const VALUES_ALL_TOGGLES = 'test/chart/all-toggles.yaml'

export function ofKind<T extends KubernetesObject>(objects: KubernetesObject[], kind: string): T[] {
  return objects.filter((o) => o.kind === kind) as T[]
}

function secretValue(objects: KubernetesObject[], namespace: string, name: string, key: string): string | undefined {
  const secret = objects.find((o) => o.kind === 'Secret' && o.metadata?.name === name && o.metadata?.namespace === namespace) as V1Secret | undefined
  const data = secret?.data?.[key]
  return data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8')
}

/**
 * A container's environment as the process would see it: plain values,
 * Secret keys looked up in the rendered Secrets (a missing optional key is
 * unset), and downward-API fields from `fieldRefs`.
 */
export function containerEnv(
  objects: KubernetesObject[], namespace: string, container: V1Container, fieldRefs: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const variable of container.env ?? ([] as V1EnvVar[])) {
    const from = variable.valueFrom
    if (!from) {
      env[variable.name] = variable.value ?? ''
    } else if (from.secretKeyRef) {
      const value = secretValue(objects, namespace, from.secretKeyRef.name!, from.secretKeyRef.key)
      if (value === undefined && !from.secretKeyRef.optional) {
        throw new Error(`${container.name}: ${variable.name} names Secret ${from.secretKeyRef.name} key ${from.secretKeyRef.key}, which the chart did not render`)
      }
      if (value !== undefined) env[variable.name] = value
    } else if (from.fieldRef) {
      env[variable.name] = fieldRefs[from.fieldRef.fieldPath] ?? `<${from.fieldRef.fieldPath}>`
    } else {
      throw new Error(`${container.name}: ${variable.name} uses a source the test does not resolve`)
    }
  }
  return env
}

/** The one container of a component's Deployment. */
export function deploymentContainer(objects: KubernetesObject[], name: string): { deployment: V1Deployment; container: V1Container } {
  const deployment = findObject<V1Deployment>(objects, 'Deployment', name)
  const containers = deployment.spec!.template.spec!.containers
  if (containers.length !== 1) throw new Error(`${name}: expected one container, found ${containers.length}`)
  return { deployment, container: containers[0]! }
}
