/** Plain-text renderings of API answers. Pure. */
import type { CommandPollResponse, OutputFileMeta } from '../client/index.js'

/** Columns padded to their widest cell, two spaces apart. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = []
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)))
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd() + '\n').join('')
}

function megabytes(value: number | null): string {
  return value === null ? '' : `${value.toFixed(2)} MB`
}

/** `320x180 h264 2.0 s` for the fields an output has. */
export function describeMedia(meta: OutputFileMeta): string {
  const parts = [
    meta.width !== null && meta.height !== null ? `${meta.width}x${meta.height}` : '',
    meta.codec ?? '',
    meta.duration === null ? '' : `${meta.duration.toFixed(1)} s`,
    megabytes(meta.size_mbytes),
  ]
  return parts.filter(Boolean).join(' ')
}

/** What `ffkube status` prints. */
export function describeCommand(command: CommandPollResponse): string {
  const rows: string[][] = [
    ['command', command.command_id],
    ['status', command.status],
    ['type', command.command_type],
  ]
  if (command.status === 'PROCESSING') rows.push(['stage', `${command.processing_stage ?? '-'}${command.progress === null ? '' : ` ${Math.floor(command.progress)}%`}`])
  if (command.total_processing_seconds !== null) rows.push(['took', `${command.total_processing_seconds.toFixed(1)} s`])
  if (command.error_status !== null) rows.push(['error', `${command.error_status}: ${command.error_message ?? ''}`])
  for (const [alias, meta] of Object.entries(command.output_files ?? {})) {
    rows.push([alias, [meta.filename, meta.status, describeMedia(meta)].filter(Boolean).join('  ')])
    const where = meta.storage_url ?? meta.external_uri
    if (where) rows.push(['', where])
  }
  for (const [alias, failed] of Object.entries(command.failed_files ?? {})) rows.push([alias, `FAILED ${failed.error_status}: ${failed.error_message} (${failed.url})`])
  return table(rows)
}

/** The last `lines` lines of a log. */
export function tail(text: string, lines: number): string {
  const all = text.replace(/\n+$/, '').split('\n')
  return all.slice(-lines).join('\n')
}
