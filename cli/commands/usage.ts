/** `ffkube usage`: GET /usage, printed as the storage standing and a table by UTC day. */
import { expectData, type Usage } from '../../client/index.js'
import type { CliContext } from '../context.js'
import { EXIT } from '../errors.js'
import { table } from '../format.js'
import { parseWholeNumber } from '../pairs.js'

/** Bytes exactly, with the binary unit people read: `73400320 (70.0 MiB)`. */
function bytes(count: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let value = count
  let unit = -1
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit += 1
  }
  return unit < 0 ? `${count} B` : `${count} (${value.toFixed(1)} ${units[unit]})`
}

/** What `ffkube usage` prints: storage against the quota, then one row per day and the totals. Pure. */
export function describeUsage(usage: Usage): string {
  const { stored_bytes, quota_bytes } = usage.storage
  const quota = quota_bytes === null ? 'no quota (unlimited)' : `of a ${bytes(quota_bytes)} quota, ${((stored_bytes / quota_bytes) * 100).toFixed(1)}% used`
  const rows = usage.by_day.map((day) => [
    day.date,
    String(day.commands),
    String(day.commands_succeeded),
    String(day.commands_failed),
    day.ffmpeg_seconds.toFixed(1),
    day.total_seconds.toFixed(1),
    String(day.files_stored),
    String(day.bytes_stored),
  ])
  const { totals } = usage
  const total = ['total', String(totals.commands), String(totals.commands_succeeded), String(totals.commands_failed), totals.ffmpeg_seconds.toFixed(1), totals.total_seconds.toFixed(1), '', '']
  return (
    `stored now: ${bytes(stored_bytes)} bytes ${quota}\n\n` +
    table([['DAY (UTC)', 'COMMANDS', 'SUCCEEDED', 'FAILED', 'FFMPEG_S', 'TOTAL_S', 'FILES', 'BYTES'], ...rows, total])
  )
}

export async function usageAction(context: CliContext, options: { days?: string; json: boolean }): Promise<number> {
  const days = options.days === undefined ? undefined : parseWholeNumber(options.days, '--days', 1, 366)
  const { client } = await context.connect()
  const usage = expectData(await client.GET('/api/v1/usage', { params: { query: days === undefined ? {} : { days } }, signal: context.signal }))
  context.out(options.json ? `${JSON.stringify(usage, null, 2)}\n` : describeUsage(usage))
  return EXIT.OK
}
