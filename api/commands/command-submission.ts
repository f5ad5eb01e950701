import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { newCommandId } from '../../contracts/command-id.js'
import type { CommandLimits, StorageDestinationSpec } from '../../contracts/command-spec.js'
import type { AuthenticatedAccount } from '../accounts/account-repository.js'
import { planFeatures } from '../accounts/plans.js'
import { systemClock, type Clock } from '../clock.js'
import { ApiError, ForbiddenError, ValidationError } from '../errors/api-errors.js'
import { DEFAULT_RETENTION_DAYS, resolveRetentionDays, type RetentionDaysByPlan } from '../files/retention.js'
import { toDestinationSpec } from '../storage-destinations/destination-spec.js'
import type { StorageDestinationDocument } from '../storage-destinations/storage-destination-repository.js'
import { newCommandDocument } from './command-document.js'
import { DEFAULT_COMMAND_LIMITS, folderLimits, resolveLimits, type CommandLimitsByPlan } from './command-limits.js'
import type { CommandRepository } from './command-repository.js'
import { checkOutputKeys } from './output-keys.js'
import type { CommandDraft } from './drafts.js'
import { StorageRoomReads } from './storage-room-reads.js'
import { validateWebhookUrl, type ApiErrorClass } from './validation.js'

/** The slice of the storage-destination repository submission needs. */
export interface DestinationGate {
  /** Throws 422 (malformed id), 403 (not Business), 404 (missing or another's), 409 (disabled). */
  requireUsable(account: AuthenticatedAccount, id: string): Promise<StorageDestinationDocument>
}

/** The slice of the file repository submission needs: which inputs are this service's own storage_urls, and whether the account may store more. */
export interface ManagedInputGate {
  /** The object key for a usable storage_url of this account, null for another URL; a 422 naming `field` for an unusable one. */
  managedInput(accountId: string, url: string, field: string): Promise<string | null>
  /** 403 STORAGE_QUOTA_EXCEEDED naming `what` when the account is at or over its storage quota. */
  requireStorageRoom(account: AuthenticatedAccount, what: string): Promise<number>
}

/**
 * Accepts validated drafts for an account: checks the Business-only fields,
 * records every command QUEUED and waiting for its hand-off, and nudges the
 * in-process dispatcher so the hand-off need not wait for its next poll.
 */
export class CommandSubmission {
  readonly #storageRoom: StorageRoomReads

  constructor(
    private readonly commands: CommandRepository,
    private readonly destinations: DestinationGate,
    private readonly files: ManagedInputGate,
    private readonly now: Clock,
    private readonly onCommandsAccepted: () => void,
    private readonly allowPrivateNetworks = false,
    private readonly limits: CommandLimitsByPlan = DEFAULT_COMMAND_LIMITS,
    private readonly retentionDays: RetentionDaysByPlan = DEFAULT_RETENTION_DAYS,
  ) {
    this.#storageRoom = new StorageRoomReads((account, what) => this.files.requireStorageRoom(account, what))
  }

  /**
   * Records the drafts in order and returns their command ids in the same
   * order. `Fault`: the endpoint's status for an invalid field value (400 on
   * run-ffmpeg-command and run-chained-ffmpeg-commands, 422 on the endpoints
   * whose error lists have no 400), given to a retention_days above the plan's.
   */
  async submit(account: AuthenticatedAccount, drafts: readonly CommandDraft[], log: FastifyBaseLogger, Fault: ApiErrorClass = ValidationError): Promise<string[]> {
    // Every draft is checked before any is written: a multiple request is accepted whole or not at all.
    const destinations: Array<StorageDestinationSpec | null> = []
    const managedInputs: string[][] = []
    const managedFolders: boolean[] = []
    const limits: CommandLimits[] = []
    const retention: Array<number | null> = []
    for (const [i, draft] of drafts.entries()) {
      const prefix = drafts.length > 1 ? `commands[${i}].` : ''
      const resolved = resolveLimits(draft.requested_limits, account.plan, this.limits, prefix)
      // The folder caps travel only with a command that brings a folder.
      limits.push(draft.input_compressed_folder ? { ...resolved, folder: folderLimits(account.plan, this.limits) } : resolved)
      retention.push(resolveRetentionDays(draft.requested_limits?.retention_days, account.plan, this.retentionDays, `${prefix}retention_days`, Fault))
      destinations.push(await this.#checkPlan(account, draft, prefix))
      checkOutputKeys(draft.output_files, destinations[i] ?? null, `${prefix}output_files`, Fault)
      managedInputs.push(await this.#managedInputs(account, draft, prefix))
      managedFolders.push(await this.#managedFolder(account, draft, prefix))
    }
    // Outputs' sizes are unknown until they exist (the status projector counts them then); an account at its quota is refused now.
    const managed = drafts.findIndex((draft) => draft.storage_destination_id === null)
    if (managed >= 0) await this.#storageRoom.require(account, `${drafts.length > 1 ? `commands[${managed}].` : ''}output_files`)
    const now = this.now()
    const docs = drafts.map((draft, i) =>
      newCommandDocument(
        draft,
        {
          commandId: newCommandId(),
          accountId: account.id,
          storageDestination: destinations[i] ?? null,
          managedInputs: managedInputs[i] ?? [],
          managedCompressedFolder: managedFolders[i] ?? false,
          limits: limits[i]!,
          retentionDays: retention[i] ?? null,
        },
        now,
      ),
    )
    // The accepting write: the record is its own outbox entry.
    await this.commands.insert(docs)
    for (const doc of docs) {
      log.info({ command_id: doc._id, account_id: account.id, command_type: doc.command_type }, 'command accepted')
    }
    const ids = docs.map((doc) => doc._id)
    this.onCommandsAccepted()
    return ids
  }

  /**
   * The aliases whose URL is one of this account's storage_urls: the runner
   * reads those from managed storage, pinned to its endpoint, instead of
   * through the URL guard. A URL of the managed bucket that does not verify
   * is refused here with 422, never fetched as an ordinary URL.
   */
  async #managedInputs(account: AuthenticatedAccount, draft: CommandDraft, prefix: string): Promise<string[]> {
    const field = `${prefix}${draft.ytdlp ? 'input_urls' : 'input_files'}`
    const managed: string[] = []
    for (const [alias, url] of Object.entries(draft.input_files)) {
      const key = await this.files.managedInput(account.id, url, `${field}.${alias}`)
      if (key === null) continue
      // yt-dlp extracts videos from sites; a stored file is read as an input of an FFmpeg command.
      if (draft.ytdlp) throw new ValidationError(`${field}.${alias}: a storage_url of this service is an input of FFmpeg commands (input_files), not a video page for yt-dlp`)
      managed.push(alias)
    }
    return managed
  }

  /** Whether the folder's URL is one of this account's storage_urls (an uploaded zip), read like a managed input; 422 for an unusable one. */
  async #managedFolder(account: AuthenticatedAccount, draft: CommandDraft, prefix: string): Promise<boolean> {
    if (!draft.input_compressed_folder) return false
    return (await this.files.managedInput(account.id, draft.input_compressed_folder, `${prefix}input_compressed_folder`)) !== null
  }

  /**
   * The Business-only fields; returns the named destination's description,
   * recorded with the command so the runner later writes where it was
   * accepted to (a destination disabled after acceptance still takes the
   * outputs of commands accepted before).
   */
  async #checkPlan(account: AuthenticatedAccount, draft: CommandDraft, prefix: string): Promise<StorageDestinationSpec | null> {
    if (draft.webhook_url !== null && !planFeatures(account.plan).businessFeatures) {
      throw new ForbiddenError(`${prefix}webhook_url: per-command webhooks require the Business plan`)
    }
    if (draft.webhook_url !== null) validateWebhookUrl(draft.webhook_url, this.allowPrivateNetworks, `${prefix}webhook_url`)
    if (draft.storage_destination_id === null) return null
    try {
      return toDestinationSpec(await this.destinations.requireUsable(account, draft.storage_destination_id))
    } catch (err) {
      // In a multiple request the message names which command: `commands[2].storage_destination_id: …`.
      if (prefix && err instanceof ApiError) err.message = `${prefix}${err.message}`
      throw err
    }
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    commandSubmission: CommandSubmission
  }
}

export interface CommandSubmissionOptions {
  now?: Clock | undefined
  /** Called with the ids of the commands just recorded; the in-process dispatcher's nudge. */
  onCommandsAccepted?: (() => void) | undefined
  /** ALLOW_PRIVATE_NETWORKS: a per-command webhook_url may then name a private address, as the account's may. */
  allowPrivateNetworks?: boolean | undefined
  /** Per-plan defaults and maximums of max_command_run_seconds and vcpu_count (config.commandLimits). */
  limits?: CommandLimitsByPlan | undefined
  /** Per-plan retention of managed files, the most retention_days may ask (config.retentionDays). */
  retentionDays?: RetentionDaysByPlan | undefined
}

/** Decorates the app with `commandSubmission`; needs the repositories (api/repositories.ts). */
export const commandSubmission = fp(
  async (app: FastifyInstance, options: CommandSubmissionOptions) => {
    const submission = new CommandSubmission(
      app.commands,
      app.storageDestinations,
      app.files,
      options.now ?? systemClock,
      options.onCommandsAccepted ?? (() => {}),
      options.allowPrivateNetworks ?? false,
      options.limits ?? DEFAULT_COMMAND_LIMITS,
      options.retentionDays ?? DEFAULT_RETENTION_DAYS,
    )
    app.decorate('commandSubmission', submission)
  },
  { name: 'command-submission', dependencies: ['repositories'] },
)
