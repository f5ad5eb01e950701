import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node'
import type { CommandSpec } from '../../contracts/command-spec.js'
import {
  MEDIA_COMMAND_GROUP,
  MEDIA_COMMAND_PLURAL,
  MEDIA_COMMAND_VERSION,
  mediaCommandFromSpec,
} from '../../contracts/media-command.js'
import type { Executor } from './executor.js'

export interface KubernetesExecutorOptions {
  kubeConfig: KubeConfig
  /** Where MediaCommands are created: the namespace the operator watches. */
  namespace: string
}

/**
 * EXECUTOR=kubernetes: hands a command to the operator by creating its
 * MediaCommand (named by the command_id). A second execute of the same command
 * finds the CR already there (409 AlreadyExists) and succeeds, so the
 * dispatcher's retries run the command once.
 */
export class KubernetesExecutor implements Executor {
  readonly name = 'kubernetes'
  private readonly api: CustomObjectsApi

  constructor(private readonly options: KubernetesExecutorOptions) {
    this.api = options.kubeConfig.makeApiClient(CustomObjectsApi)
  }

  async execute(spec: CommandSpec): Promise<void> {
    const body = mediaCommandFromSpec(spec, this.options.namespace)
    try {
      await this.api.createNamespacedCustomObject({
        group: MEDIA_COMMAND_GROUP,
        version: MEDIA_COMMAND_VERSION,
        plural: MEDIA_COMMAND_PLURAL,
        namespace: this.options.namespace,
        body,
      })
    } catch (err) {
      // AlreadyExists: an earlier attempt created it; anything else is the dispatcher's to retry.
      if ((err as { code?: unknown }).code === 409) return
      throw err
    }
  }
}
