import { pageOf } from '../pagination.js'
import type { FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { planFeatures } from '../accounts/plans.js'
import { errorResponses } from '../errors/error-response.js'
import { isTerminalStatus } from '../../contracts/command-types.js'
import { systemClock, type Clock } from '../clock.js'
import { ConflictError, ForbiddenError, InvalidRequestError, NotFoundError, NotImplementedError } from '../errors/api-errors.js'
import { CANCELLED, toPollResponse } from './command-document.js'
import type { ApiErrorClass } from './validation.js'
import { draftChained, draftFfmpegCommand, draftMultiple, draftYtdlpCommand, draftYtdlpDownload, type CommandDraft } from './drafts.js'
import {
  CancelCommandResponse,
  CommandIdResponse,
  CommandIdsResponse,
  CommandListResponse,
  CommandParams,
  CommandPollResponse,
  DeleteCommandFilesResponse,
  ListCommandsQuery,
  RunChainedBody,
  RunFfmpegCommandBody,
  RunMultipleBody,
  RunYtdlpCommandBody,
  YtdlpDownloadBody,
} from './schemas.js'

/** Video downloads are gated before the body is validated: a plan without them learns that first. */
async function requireVideoDownloads(request: FastifyRequest): Promise<void> {
  if (!planFeatures(request.account.plan).videoDownloads) {
    throw new ForbiddenError('video downloads (yt-dlp endpoints) are not available on the free plan; they need a trial, Growth or Business plan')
  }
}

/** What app.ts gives the command routes. */
interface CommandRoutesOptions {
  ytdlpAvailable?: (() => boolean) | undefined
  /** run-ffmpeg-command's argument policy (AppOptions.ffmpegPlanner). */
  ffmpegPlanner?: FfmpegPlanner | undefined
  now?: Clock | undefined
  /** The in-process canceller's nudge (a canceller in another process polls). */
  onCancelRequested?: (() => void) | undefined
}

/** The command endpoints: five ways to submit, then get, list, cancel, and delete a command's outputs. */
export const commandRoutes: FastifyPluginAsyncTypebox<CommandRoutesOptions> = async (app, options) => {
  await submitRoutes(app, options)
  await acceptedCommandRoutes(app, options)
}

/** The five ways to submit: each drafts its body and hands the drafts to the submission. */
const submitRoutes: FastifyPluginAsyncTypebox<CommandRoutesOptions> = async (app, options) => {
  const accept = async (request: FastifyRequest, drafts: CommandDraft[], Fault?: ApiErrorClass) => app.commandSubmission.submit(request.account, drafts, request.log, Fault)
  const acceptOne = async (request: FastifyRequest, draft: CommandDraft, Fault?: ApiErrorClass) => ({ command_id: (await accept(request, [draft], Fault))[0]! })
  // After the plan check: a plan without downloads learns that first; then 501 when this host has no yt-dlp to run them.
  const requireYtdlp = async (request: FastifyRequest) => {
    await requireVideoDownloads(request)
    if (options.ytdlpAvailable && !options.ytdlpAvailable()) throw new NotImplementedError('the yt-dlp backend is unavailable; retry after a short delay')
  }

  app.post(
    '/run-ffmpeg-command',
    { schema: { tags: ['commands'], body: RunFfmpegCommandBody, response: { 200: CommandIdResponse, ...errorResponses(400, 403, 404, 409, 422) } } },
    async (request) => acceptOne(request, draftFfmpegCommand(request.body, { ffmpegPlanner: options.ffmpegPlanner }), InvalidRequestError),
  )

  app.post(
    '/run-chained-ffmpeg-commands',
    { schema: { tags: ['commands'], body: RunChainedBody, response: { 200: CommandIdResponse, ...errorResponses(400, 403, 404, 409, 422) } } },
    async (request) => acceptOne(request, draftChained(request.body), InvalidRequestError),
  )

  app.post(
    '/run-multiple-ffmpeg-commands',
    { schema: { tags: ['commands'], body: RunMultipleBody, response: { 200: CommandIdsResponse, ...errorResponses(400, 403, 404, 409, 422) } } },
    async (request) => ({ command_ids: await accept(request, draftMultiple(request.body)) }),
  )

  app.post(
    '/ytdlp-download',
    {
      schema: { tags: ['commands'], body: YtdlpDownloadBody, response: { 200: CommandIdResponse, ...errorResponses(403, 404, 409, 422, 501) } },
      config: { validationErrorStatus: 422 },
      preValidation: requireYtdlp,
    },
    async (request) => acceptOne(request, draftYtdlpDownload(request.body)),
  )

  app.post(
    '/run-ytdlp-command',
    {
      schema: { tags: ['commands'], body: RunYtdlpCommandBody, response: { 200: CommandIdResponse, ...errorResponses(403, 404, 409, 422, 501) } },
      config: { validationErrorStatus: 422 },
      preValidation: requireYtdlp,
    },
    async (request) => acceptOne(request, draftYtdlpCommand(request.body)),
  )
}

/** A command once accepted: read it, list them, cancel it, delete its managed outputs. */
const acceptedCommandRoutes: FastifyPluginAsyncTypebox<CommandRoutesOptions> = async (app, options) => {
  const now = options.now ?? systemClock

  app.get(
    '/commands/:commandId',
    { schema: { tags: ['commands'], params: CommandParams, response: { 200: CommandPollResponse, ...errorResponses(404) } } },
    async (request) => {
      const command = await app.commands.findPollResponse(request.account.id, request.params.commandId)
      if (!command) throw new NotFoundError(`commandId: no command ${request.params.commandId}`)
      return command
    },
  )

  app.get(
    '/commands',
    { schema: { tags: ['commands'], querystring: ListCommandsQuery, response: { 200: CommandListResponse, ...errorResponses(400) } } },
    async (request) => {
      const { status } = request.query
      const { limit, offset } = pageOf(request.query)
      const docs = await app.commands.list(request.account.id, { limit, offset, status })
      return { commands: docs.map(toPollResponse), limit, offset }
    },
  )

  app.post(
    '/commands/:commandId/cancel',
    {
      schema: {
        tags: ['commands'],
        description:
          'Cancels a QUEUED or PROCESSING command: it ends FAILED with error_status CANCELLED, its runner and tools are stopped, no output is stored, and the webhook is sent as for any FAILED command. A second call answers like the first. 409 when the command had already ended.',
        params: CommandParams,
        response: { 200: CancelCommandResponse, ...errorResponses(404, 409) },
      },
    },
    async (request) => {
      const { commandId } = request.params
      const accountId = request.account.id
      const cancelled = { command_id: commandId, status: 'FAILED' as const }
      if (await app.commands.requestCancel(accountId, commandId, now())) {
        // Best effort, for a command not yet handed off: it then never is. The canceller does it again.
        await app.commands.withdrawDispatch(commandId, now())
        request.log.info({ command_id: commandId, account_id: accountId }, 'cancel requested')
        options.onCancelRequested?.()
        return cancelled
      }
      // Nothing written: say why from the record as it is now.
      const doc = await app.commands.find(accountId, commandId)
      if (!doc) throw new NotFoundError(`commandId: no command ${commandId}`)
      // Cancelled before (still ending, or ended CANCELLED): the same answer, nothing changed.
      if (!isTerminalStatus(doc.status) || doc.error_status === CANCELLED) return cancelled
      throw new ConflictError(`commandId: command ${commandId} has already ended ${doc.status}${doc.error_status ? ` (${doc.error_status})` : ''}; only a QUEUED or PROCESSING command can be cancelled`)
    },
  )

  app.delete(
    '/commands/:commandId/files',
    { schema: { tags: ['commands'], params: CommandParams, response: { 200: DeleteCommandFilesResponse, ...errorResponses(404) } } },
    async (request) => {
      const doc = await app.commands.find(request.account.id, request.params.commandId)
      if (!doc) throw new NotFoundError(`commandId: no command ${request.params.commandId}`)
      const deleted = await app.files.deleteCommandOutputs(doc, request.log)
      return { deleted: true as const, files_deleted: deleted }
    },
  )
}
