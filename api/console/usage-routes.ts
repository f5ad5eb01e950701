import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { COMMAND_STATUSES } from '../../contracts/command-types.js'
import type { Clock } from '../clock.js'
import { errorResponses } from '../errors/error-response.js'
import type { ConsoleAuth } from './console-auth.js'
import { UsageResponse } from './schemas.js'
import { requireConsoleSession } from './session-routes.js'

/** The usage page's window. */
export const USAGE_DAYS = 30
const BYTES_PER_MB = 1024 * 1024

/** GET /console/api/usage: the last 30 days of commands, processing seconds and managed bytes, from the records. */
export const consoleUsageRoutes: FastifyPluginAsyncTypebox<{ consoleAuth: ConsoleAuth; now: Clock }> = async (app, { consoleAuth, now }) => {
  app.addHook('onRequest', requireConsoleSession(consoleAuth))

  app.get(
    '/usage',
    { schema: { summary: "The account's usage over the last 30 days", tags: ['console'], security: [{ consoleSession: [] }], response: { 200: UsageResponse, ...errorResponses(401, 403) } } },
    async (request) => {
      const accountId = request.consoleCaller.account.id
      const to = now()
      const from = new Date(to.getTime() - USAGE_DAYS * 24 * 60 * 60_000)
      const [commands, files] = await Promise.all([app.commands.usageRowsSince(accountId, from), app.files.storedRowsSince(accountId, from)])
      const byStatus = Object.fromEntries(COMMAND_STATUSES.map((status) => [status, 0])) as Record<(typeof COMMAND_STATUSES)[number], number>
      let processing = 0
      let ffmpeg = 0
      for (const command of commands) {
        byStatus[command.status] += 1
        processing += command.total_processing_seconds ?? 0
        ffmpeg += command.ffmpeg_command_run_seconds ?? 0
      }
      // Stored now, of the files stored in the window.
      const stored = files.filter((file) => file.deleted_at === null && file.created_at >= from)
      const megabytes = stored.reduce((sum, file) => sum + (file.size_mbytes ?? 0), 0)
      return {
        from: from.toISOString(),
        to: to.toISOString(),
        days: USAGE_DAYS,
        commands: { total: commands.length, by_status: byStatus },
        processing_seconds: Math.round(processing * 1000) / 1000,
        ffmpeg_run_seconds: Math.round(ffmpeg * 1000) / 1000,
        bytes_stored: Math.round(megabytes * BYTES_PER_MB),
        files_stored: stored.length,
      }
    },
  )
}
