/** `ffkube presets list` and `presets show`; `presets run` lives with `run` (commands/run.ts). */
import { expectData } from '../../client/index.js'
import type { CliContext } from '../context.js'
import { EXIT } from '../errors.js'
import { table } from '../format.js'
import { parseWholeNumber } from '../pairs.js'

export async function listPresetsAction(context: CliContext, options: { limit?: string; offset?: string; json: boolean }): Promise<number> {
  const query = {
    ...(options.limit === undefined ? {} : { limit: parseWholeNumber(options.limit, '--limit', 1, 100) }),
    ...(options.offset === undefined ? {} : { offset: parseWholeNumber(options.offset, '--offset', 0, Number.MAX_SAFE_INTEGER) }),
  }
  const { client } = await context.connect()
  const page = expectData(await client.GET('/api/v1/presets', { params: { query }, signal: context.signal }))
  if (options.json) {
    context.out(`${JSON.stringify(page, null, 2)}\n`)
    return EXIT.OK
  }
  const rows = page.presets.map((preset) => [preset.preset_id, preset.name, preset.is_system ? 'system' : 'yours', preset.input_file_keys.join(','), Object.keys(preset.output_file_definitions).join(',')])
  context.out(table([['PRESET', 'NAME', 'OWNER', 'INPUTS', 'OUTPUTS'], ...rows]))
  return EXIT.OK
}

export async function showPresetAction(context: CliContext, presetId: string, options: { json: boolean }): Promise<number> {
  const { client } = await context.connect()
  const preset = expectData(await client.GET('/api/v1/presets/{presetId}', { params: { path: { presetId } }, signal: context.signal }))
  if (options.json) {
    context.out(`${JSON.stringify(preset, null, 2)}\n`)
    return EXIT.OK
  }
  const commands = preset.ffmpeg_commands ?? (preset.ffmpeg_command === null ? [] : [preset.ffmpeg_command])
  context.out(
    table([
      ['preset', preset.preset_id],
      ['name', preset.name],
      ['description', preset.description ?? ''],
      ['type', preset.command_type],
      ['inputs', preset.input_file_keys.join(', ')],
      ...Object.entries(preset.output_file_definitions).map(([alias, filename]) => [alias, filename]),
      ...commands.map((command, i) => [i === 0 ? 'command' : '', command]),
    ]),
  )
  return EXIT.OK
}
