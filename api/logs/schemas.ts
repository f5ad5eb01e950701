import { Type, type Static } from 'typebox'
import { COMMAND_STATUSES } from '../../contracts/command-types.js'

/** GET /commands/:commandId/logs. */
export const CommandLogResponse = Type.Object({
  command_id: Type.String(),
  status: Type.Enum([...COMMAND_STATUSES]),
  log: Type.String({
    description:
      "the tools' stderr (ffmpeg, yt-dlp), each step introduced by a line `==> <step>`, with the work directory's paths rewritten to the command's aliases and filenames; what has arrived so far while the command runs; empty before the first tool starts",
  }),
  truncated: Type.Boolean({ description: 'true when only the last 256 KiB are kept, or the runner dropped lines it could not send in time' }),
})
export type CommandLogResponse = Static<typeof CommandLogResponse>
