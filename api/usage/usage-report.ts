import type { CommandStatus } from '../../contracts/command-types.js'

const DAY_MS = 24 * 60 * 60_000
const BYTES_PER_MB = 1024 * 1024

/** What a command adds to its day: the day it was submitted. */
export interface CommandUsageRow {
  created_at: Date
  status: CommandStatus
  total_processing_seconds: number | null
  ffmpeg_command_run_seconds: number | null
}

/** A managed file that was stored at some point in the window. */
export interface StoredFileRow {
  created_at: Date
  deleted_at: Date | null
  size_mbytes: number | null
}

export interface UsageDay {
  date: string
  commands: number
  commands_succeeded: number
  commands_failed: number
  ffmpeg_seconds: number
  total_seconds: number
  bytes_stored: number
  files_stored: number
}

export interface UsageReport {
  from: string
  to: string
  days: number
  totals: Omit<UsageDay, 'date' | 'bytes_stored' | 'files_stored'>
  by_day: UsageDay[]
}

/** Midnight UTC of `days - 1` days before `now`'s day: the window ends with today. */
export function usageWindowStart(now: Date, days: number): Date {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  return new Date(today - (days - 1) * DAY_MS)
}

const round = (seconds: number): number => Math.round(seconds * 1000) / 1000

/**
 * Usage by UTC day, pure. Commands count on the day they were submitted,
 * with the seconds they ran (so far). Storage is what was in managed storage
 * at the end of each day (now, for today): files created before it and not
 * deleted by then.
 */
export function usageByDay(input: { now: Date; days: number; commands: Iterable<CommandUsageRow>; files: readonly StoredFileRow[] }): UsageReport {
  const start = usageWindowStart(input.now, input.days).getTime()
  // One walk over the files' arrivals and deletions in time order, not a pass over every file per day.
  const changes = input.files
    .flatMap((f) => {
      const size = f.size_mbytes ?? 0
      const arrival = { at: f.created_at.getTime(), files: 1, megabytes: size }
      return f.deleted_at === null ? [arrival] : [arrival, { at: f.deleted_at.getTime(), files: -1, megabytes: -size }]
    })
    .sort((a, b) => a.at - b.at)
  let next = 0
  let files = 0
  let megabytes = 0
  const byDay: UsageDay[] = Array.from({ length: input.days }, (_, i) => {
    const dayEnd = Math.min(start + (i + 1) * DAY_MS, input.now.getTime())
    for (; next < changes.length && (changes[next]?.at ?? Infinity) <= dayEnd; next++) {
      files += changes[next]?.files ?? 0
      megabytes += changes[next]?.megabytes ?? 0
    }
    return {
      date: new Date(start + i * DAY_MS).toISOString().slice(0, 10),
      commands: 0,
      commands_succeeded: 0,
      commands_failed: 0,
      ffmpeg_seconds: 0,
      total_seconds: 0,
      bytes_stored: Math.max(0, Math.round(megabytes * BYTES_PER_MB)),
      files_stored: files,
    }
  })
  for (const command of input.commands) {
    const day = byDay[Math.floor((command.created_at.getTime() - start) / DAY_MS)]
    if (!day) continue
    day.commands += 1
    if (command.status === 'SUCCESS') day.commands_succeeded += 1
    if (command.status === 'FAILED') day.commands_failed += 1
    day.ffmpeg_seconds += command.ffmpeg_command_run_seconds ?? 0
    day.total_seconds += command.total_processing_seconds ?? 0
  }
  const totals = { commands: 0, commands_succeeded: 0, commands_failed: 0, ffmpeg_seconds: 0, total_seconds: 0 }
  for (const day of byDay) {
    day.ffmpeg_seconds = round(day.ffmpeg_seconds)
    day.total_seconds = round(day.total_seconds)
    totals.commands += day.commands
    totals.commands_succeeded += day.commands_succeeded
    totals.commands_failed += day.commands_failed
    totals.ffmpeg_seconds += day.ffmpeg_seconds
    totals.total_seconds += day.total_seconds
  }
  totals.ffmpeg_seconds = round(totals.ffmpeg_seconds)
  totals.total_seconds = round(totals.total_seconds)
  return { from: new Date(start).toISOString(), to: input.now.toISOString(), days: input.days, totals, by_day: byDay }
}
