import { Type, type Static } from 'typebox'

export const DEFAULT_USAGE_DAYS = 30

export const UsageQuery = Type.Object(
  { days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: DEFAULT_USAGE_DAYS, description: 'UTC days, ending with today (default 30)' })) },
  { additionalProperties: false },
)
export type UsageQuery = Static<typeof UsageQuery>

const Counts = {
  commands: Type.Integer({ minimum: 0, description: 'commands submitted' }),
  commands_succeeded: Type.Integer({ minimum: 0, description: 'of them, SUCCESS by now' }),
  commands_failed: Type.Integer({ minimum: 0, description: 'of them, FAILED by now' }),
  ffmpeg_seconds: Type.Number({ minimum: 0, description: 'sum of their ffmpeg_command_run_seconds' }),
  total_seconds: Type.Number({ minimum: 0, description: 'sum of their total_processing_seconds' }),
}

/** The account's managed storage now, against its plan's quota (api/files/storage-quota.ts). */
export const StorageStandingSchema = Type.Object(
  {
    stored_bytes: Type.Integer({ minimum: 0, description: 'bytes the account holds in managed storage now, as its quota counts them: uploads (from the moment they are received), stored URLs and outputs' }),
    quota_bytes: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: "the plan's storage quota; null when unlimited" }),
  },
  { title: 'StorageStanding' },
)

export const UsageResponse = Type.Object(
  {
    storage: StorageStandingSchema,
    from: Type.String({ format: 'date-time', description: 'midnight UTC of the first day' }),
    to: Type.String({ format: 'date-time', description: 'now' }),
    days: Type.Integer({ minimum: 1 }),
    totals: Type.Object(Counts),
    by_day: Type.Array(
      Type.Object({
        date: Type.String({ format: 'date', description: 'the UTC day' }),
        ...Counts,
        bytes_stored: Type.Integer({ minimum: 0, description: "bytes in managed storage at the day's end (now, for today): uploads and outputs; customer buckets not counted" }),
        files_stored: Type.Integer({ minimum: 0 }),
      }),
    ),
  },
  { title: 'Usage' },
)
