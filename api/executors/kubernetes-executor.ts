import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Secret } from '@kubernetes/client-node'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { DESTINATION_SECRET_KEY, destinationSecretName } from '../../contracts/destination-credentials.js'
import { YTDLP_COOKIES_SECRET_KEY, ytdlpCookiesSecretName } from '../../contracts/ytdlp-cookies.js'
import {
  LABEL_COMMAND_ID,
  MEDIA_COMMAND_API_VERSION,
  MEDIA_COMMAND_GROUP,
  MEDIA_COMMAND_KIND,
  MEDIA_COMMAND_PLURAL,
  MEDIA_COMMAND_VERSION,
  mediaCommandFromSpec,
  type MediaCommand,
} from '../../contracts/media-command.js'
import type { DestinationCredentialSource, Executor, YtdlpCookieSource } from './executor.js'

export interface KubernetesExecutorOptions {
  kubeConfig: KubeConfig
  /** Where MediaCommands are created: the namespace the operator watches. */
  namespace: string
  /** Opens a command's storage-destination credentials, for its per-command Secret. */
  destinationCredentials?: DestinationCredentialSource
  /** Opens the account's yt-dlp cookies, for a yt-dlp command's per-command Secret. */
  ytdlpCookies?: YtdlpCookieSource
}

function isAlreadyExists(err: unknown): boolean {
  return (err as { code?: unknown }).code === 409
}

/**
 * EXECUTOR=kubernetes: hands a command to the operator by creating its
 * MediaCommand (named by the command_id). A second execute of the same command
 * finds the CR already there (409 AlreadyExists) and succeeds, so the
 * dispatcher's retries run the command once.
 *
 * A command with a storage destination also gets the Secret
 * `ffkube-<command_id>-destination` holding that destination's credentials
 * (the CR never does); job-builder mounts it in the upload container only.
 * It is created before the MediaCommand, so the pod never waits for it, then
 * given the MediaCommand as owner so it is garbage-collected with it. Each
 * step is idempotent, so a retried execute completes what a failed one began.
 * A yt-dlp command of an account with cookies gets the Secret
 * `ffkube-<command_id>-ytdlp-cookies` the same way (contracts/ytdlp-cookies.ts);
 * job-builder mounts it, optional, in the upload container only.
 * The API's ServiceAccount therefore needs `create` and `patch` on secrets in
 * this namespace (besides `create` and `get` on mediacommands).
 */
export class KubernetesExecutor implements Executor {
  readonly name = 'kubernetes'
  private readonly api: CustomObjectsApi
  private readonly core: CoreV1Api

  constructor(private readonly options: KubernetesExecutorOptions) {
    this.api = options.kubeConfig.makeApiClient(CustomObjectsApi)
    this.core = options.kubeConfig.makeApiClient(CoreV1Api)
  }

  async execute(spec: CommandSpec): Promise<void> {
    const secrets: string[] = []
    if (spec.storageDestination) {
      const credentials = (await this.options.destinationCredentials?.(spec)) ?? {}
      secrets.push(await this.#createSecret(spec, destinationSecretName(spec.commandId), DESTINATION_SECRET_KEY, JSON.stringify(credentials)))
    }
    const cookies = spec.commandType === 'YTDLP_COMMAND' ? await this.options.ytdlpCookies?.(spec) : null
    if (cookies) secrets.push(await this.#createSecret(spec, ytdlpCookiesSecretName(spec.commandId), YTDLP_COOKIES_SECRET_KEY, cookies))
    const mc = await this.#createMediaCommand(spec, secrets.length > 0)
    for (const name of secrets) await this.#ownSecret(name, mc)
  }

  /**
   * Marks the command's MediaCommand cancelled (spec.cancel, the one spec
   * field the CRD lets change, and only to true); the operator then deletes
   * its Job and pods and ends its status FAILED / CANCELLED. No MediaCommand
   * (never created, or deleted after its retention): nothing to stop.
   * Needs `patch` on mediacommands.
   */
  async cancel(commandId: string): Promise<void> {
    const cr = { group: MEDIA_COMMAND_GROUP, version: MEDIA_COMMAND_VERSION, plural: MEDIA_COMMAND_PLURAL, namespace: this.options.namespace }
    try {
      await this.api.patchNamespacedCustomObject(
        { ...cr, name: commandId, body: { spec: { cancel: true } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
    } catch (err) {
      if ((err as { code?: unknown }).code !== 404) throw err
    }
  }

  /** `owning`: the MediaCommand's uid is needed, to own the command's Secrets. */
  async #createMediaCommand(spec: CommandSpec, owning: boolean): Promise<MediaCommand> {
    const { namespace } = this.options
    const cr = { group: MEDIA_COMMAND_GROUP, version: MEDIA_COMMAND_VERSION, plural: MEDIA_COMMAND_PLURAL, namespace }
    try {
      return (await this.api.createNamespacedCustomObject({ ...cr, body: mediaCommandFromSpec(spec, namespace) })) as MediaCommand
    } catch (err) {
      // AlreadyExists: an earlier attempt created it; anything else is the dispatcher's to retry.
      if (!isAlreadyExists(err)) throw err
      if (!owning) return mediaCommandFromSpec(spec, namespace)
      // Its uid is needed to own the Secret.
      return (await this.api.getNamespacedCustomObject({ ...cr, name: spec.commandId })) as MediaCommand
    }
  }

  /**
   * One Secret of the command, holding `key`; returns its name. Credentials
   * the API cannot open (the destination vanished) still get a Secret, holding
   * `{}`: the upload step then fails the command with DESTINATION_UPLOAD_FAILED
   * instead of the pod waiting for a missing volume.
   */
  async #createSecret(spec: CommandSpec, name: string, key: string, value: string): Promise<string> {
    const body: V1Secret = {
      metadata: { name, namespace: this.options.namespace, labels: { [LABEL_COMMAND_ID]: spec.commandId } },
      type: 'Opaque',
      stringData: { [key]: value },
    }
    try {
      await this.core.createNamespacedSecret({ namespace: this.options.namespace, body })
    } catch (err) {
      if (!isAlreadyExists(err)) throw err
    }
    return name
  }

  async #ownSecret(name: string, mc: MediaCommand): Promise<void> {
    const commandId = mc.metadata.name
    const uid = mc.metadata.uid
    if (!uid) throw new Error(`MediaCommand ${commandId} has no uid`)
    const ownerReference = { apiVersion: MEDIA_COMMAND_API_VERSION, kind: MEDIA_COMMAND_KIND, name: commandId, uid, blockOwnerDeletion: false }
    await this.core.patchNamespacedSecret({
      name,
      namespace: this.options.namespace,
      // A JSON patch that sets the whole list: applying it twice changes nothing.
      body: [{ op: 'add', path: '/metadata/ownerReferences', value: [ownerReference] }],
    })
  }
}
