import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CommandParams } from '../commands/schemas.js'
import { NotFoundError } from '../errors/api-errors.js'
import { errorResponses } from '../errors/error-response.js'
import { logText } from './log-record.js'
import { CommandLogResponse } from './schemas.js'

/** GET /commands/:commandId/logs: the command's log so far, or in full once it ended. */
export const commandLogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/commands/:commandId/logs',
    {
      schema: {
        tags: ['commands'],
        description: "The tools' stderr for this command: the last 256 KiB, while it runs and after it ended.",
        params: CommandParams,
        response: { 200: CommandLogResponse, ...errorResponses(404) },
      },
    },
    async (request) => {
      const doc = await app.commands.find(request.account.id, request.params.commandId)
      if (!doc) throw new NotFoundError(`commandId: no command ${request.params.commandId}`)
      const record = await app.commandLogs.find(doc._id)
      return { command_id: doc._id, status: doc.status, log: logText(record), truncated: record?.truncated ?? false }
    },
  )
}
