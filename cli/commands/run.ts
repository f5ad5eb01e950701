/**
 * `ffkube run`, `ffkube wait` and `ffkube presets run`: submit (or pick up) a
 * command, follow it with a progress display to its end, then download its
 * outputs, or report the failure with the log's tail.
 */
import { openAsBlob } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { commandEvents, expectData, uploadFile, waitForFile, type CommandPollResponse, type RequestBody } from '../../client/index.js'
import type { CliContext, Connection } from '../context.js'
import { downloadOutputs, refuseExisting } from '../downloads.js'
import { CliError, EXIT, UsageError } from '../errors.js'
import { followCommand } from '../follow.js'
import { describeCommand, describeMedia, tail } from '../format.js'
import { looksLikeUrl, parsePairs, parsePositiveNumber, parseWholeNumber } from '../pairs.js'
import { barDisplay, lineDisplay } from '../progress-display.js'

/** Lines of the log shown under a FAILED command. */
export const LOG_TAIL_LINES = 20

/** What to do once a command is followed to its end. */
export interface FinishOptions {
  download: boolean
  force: boolean
  dir?: string
  json: boolean
}

/** The options every submitting subcommand shares. */
export interface SubmitOptions extends FinishOptions {
  in: string[]
  metadata: string[]
  webhookUrl?: string
  maxSeconds?: string
  vcpu?: string
  retentionDays?: string
  detach: boolean
}

export interface RunOptions extends SubmitOptions {
  out: string[]
  storageDestination?: string
  /** input_compressed_folder: a zip's URL, or a local zip uploaded first. */
  folder?: string
}

type RunBody = RequestBody<'/api/v1/run-ffmpeg-command', 'post'>
type Limits = Pick<RunBody, 'max_command_run_seconds' | 'vcpu_count' | 'retention_days' | 'metadata' | 'webhook_url'>

/** The optional fields every submit body takes, from the shared options. */
function commonFields(options: SubmitOptions): Limits {
  const metadata = parsePairs(options.metadata, '--metadata')
  return {
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(options.webhookUrl === undefined ? {} : { webhook_url: options.webhookUrl }),
    // 30 days: far above any plan's maximum, which the API states in its 422.
    ...(options.maxSeconds === undefined ? {} : { max_command_run_seconds: parseWholeNumber(options.maxSeconds, '--max-seconds', 1, 2_592_000) }),
    ...(options.vcpu === undefined ? {} : { vcpu_count: parsePositiveNumber(options.vcpu, '--vcpu') }),
    // The API's own bounds; the plan's retention, often shorter, is stated in its 400.
    ...(options.retentionDays === undefined ? {} : { retention_days: parseWholeNumber(options.retentionDays, '--retention-days', 1, 3650) }),
  }
}

/**
 * `--in` values: URLs as given; a local file is uploaded first (POST
 * /files/upload) and replaced by its storage_url once STORED.
 */
async function resolveInputs(context: CliContext, connection: Connection, inputs: Record<string, string>): Promise<Record<string, string>> {
  const resolved: Record<string, string> = {}
  for (const [alias, value] of Object.entries(inputs)) resolved[alias] = await resolveLocation(context, connection, value, `--in ${alias}=${value}`, alias)
  return resolved
}

/** One URL as given, or a local file uploaded and replaced by its storage_url. */
async function resolveLocation(context: CliContext, connection: Connection, value: string, option: string, what: string): Promise<string> {
  if (looksLikeUrl(value)) return value
  const path = resolve(context.cwd, value)
  const file = await stat(path).catch(() => null)
  if (!file?.isFile()) throw new UsageError(`${option}: not a URL, and no such file`)
  context.err(`uploading ${value} for ${what}\n`)
  const { file_id } = await uploadFile(connection.client, await openAsBlob(path), basename(path))
  const stored = await waitForFile(connection.client, file_id, (ms) => context.sleep(ms, context.signal))
  if (stored.status !== 'STORED' || !stored.storage_url) throw new CliError(`uploading ${value} failed: ${stored.error_status ?? stored.status}: ${stored.error_message ?? ''}`, EXIT.API)
  return stored.storage_url
}

/** `ffkube run [options] <command...>`: one command string runs alone, several run chained in one sandbox. */
export async function runAction(context: CliContext, commands: string[], options: RunOptions): Promise<number> {
  if (commands.length > 1 && commands.some((command) => !/^\s*ffmpeg\s/.test(command))) {
    throw new UsageError("each argument is one whole command: quote it (ffkube run … 'ffmpeg -i {{in_video}} … {{out_small}}'); several quoted commands run chained")
  }
  const inputs = parsePairs(options.in, '--in')
  const outputs = parsePairs(options.out, '--out')
  const common = commonFields(options)
  const dir = resolve(context.cwd, options.dir ?? '.')
  if (options.download && !options.detach) await refuseExisting(Object.values(outputs), dir, options.force)
  const connection = await context.connect()
  const folder = options.folder === undefined ? null : await resolveLocation(context, connection, options.folder, `--folder ${options.folder}`, 'the folder')
  const fields = {
    // With a folder, a command may read it alone: input_files is then left out rather than sent empty.
    ...(folder !== null && Object.keys(inputs).length === 0 ? {} : { input_files: await resolveInputs(context, connection, inputs) }),
    ...(folder !== null ? { input_compressed_folder: folder } : {}),
    output_files: outputs,
    ...common,
    ...(options.storageDestination === undefined ? {} : { storage_destination_id: options.storageDestination }),
  }
  const { command_id } =
    commands.length === 1
      ? expectData(await connection.client.POST('/api/v1/run-ffmpeg-command', { body: { ...fields, ffmpeg_command: commands[0]! }, signal: context.signal }))
      : expectData(await connection.client.POST('/api/v1/run-chained-ffmpeg-commands', { body: { ...fields, ffmpeg_commands: commands }, signal: context.signal }))
  if (options.detach) {
    context.out(`${command_id}\n`)
    return EXIT.OK
  }
  return finishCommand(context, connection, command_id, { ...options, dir, submitted: true })
}

/** `ffkube presets run <presetId> --in …`: POST /presets/{id}/execute, then as `run`. */
export async function executePresetAction(context: CliContext, presetId: string, options: SubmitOptions): Promise<number> {
  const inputs = parsePairs(options.in, '--in')
  const common = commonFields(options)
  const dir = resolve(context.cwd, options.dir ?? '.')
  const connection = await context.connect()
  if (options.download && !options.detach) {
    const preset = expectData(await connection.client.GET('/api/v1/presets/{presetId}', { params: { path: { presetId } }, signal: context.signal }))
    await refuseExisting(Object.values(preset.output_file_definitions), dir, options.force)
  }
  const body = { input_files: await resolveInputs(context, connection, inputs), ...common }
  const { command_id } = expectData(await connection.client.POST('/api/v1/presets/{presetId}/execute', { params: { path: { presetId } }, body, signal: context.signal }))
  if (options.detach) {
    context.out(`${command_id}\n`)
    return EXIT.OK
  }
  return finishCommand(context, connection, command_id, { ...options, dir, submitted: true })
}

/** `ffkube wait <commandId>`: follows a command already submitted, then as `run`. */
export async function waitAction(context: CliContext, commandId: string, options: FinishOptions): Promise<number> {
  const connection = await context.connect()
  return finishCommand(context, connection, commandId, { ...options, dir: resolve(context.cwd, options.dir ?? '.'), submitted: false })
}

/** Follows with a progress display; then downloads (SUCCESS) or reports the error and the log's tail (FAILED). */
async function finishCommand(context: CliContext, connection: Connection, commandId: string, options: FinishOptions & { dir: string; submitted: boolean }): Promise<number> {
  const { client, baseUrl, apiKey } = connection
  // Right after a submit the command is QUEUED (the POST accepted it); `wait` knows nothing until the first event.
  const display = context.stderr.isTTY ? barDisplay(context.stderr, commandId, options.submitted ? 'QUEUED' : 'CONNECTING') : lineDisplay(context.err, commandId)
  let final: CommandPollResponse
  try {
    final = await followCommand(commandId, {
      events: (id, lastEventId, signal) => commandEvents(id, { baseUrl, apiKey, signal, ...(lastEventId === undefined ? {} : { lastEventId }) }),
      get: async (id, signal) => expectData(await client.GET('/api/v1/commands/{commandId}', { params: { path: { commandId: id } }, signal })),
      sleep: (ms, signal) => context.sleep(ms, signal),
      onUpdate: (command) => display.update(command),
      onFallback: (reason) => context.err(`the event stream failed (${reason}); polling instead\n`),
      signal: context.signal,
    })
  } catch (error) {
    display.stop()
    if (context.signal.aborted) {
      throw new CliError(`interrupted; command ${commandId} keeps running: \`ffkube wait ${commandId}\` follows it again, \`ffkube cancel ${commandId}\` stops it`, EXIT.INTERRUPTED)
    }
    throw error
  }
  display.stop()
  if (options.json) context.out(`${JSON.stringify(final, null, 2)}\n`)
  if (final.status === 'FAILED') {
    context.err(`ffkube: command ${commandId} FAILED: ${final.error_status ?? 'FAILED'}: ${final.error_message ?? '(no message)'}\n`)
    context.err(await logTail(context, connection, commandId))
    return EXIT.FAILED
  }
  if (!options.download) {
    if (!options.json) context.out(describeCommand(final))
    return EXIT.OK
  }
  for (const result of await downloadOutputs(final, { dir: options.dir, force: options.force })) {
    if ('skipped' in result) context.err(`${result.alias}: not downloaded: ${result.skipped}\n`)
    else if (!options.json) context.out(`${result.alias}  ${result.path}${result.member === undefined ? `  ${describeMedia(final.output_files![result.alias]!)}` : ''}\n`)
  }
  return EXIT.OK
}

/** Reads of the log, LOG_SETTLE_MS apart, before its tail is printed as it stands. */
export const LOG_SETTLE_READS = 6
export const LOG_SETTLE_MS = 500

/**
 * The last lines of the command's log, as a block to print; a note when it
 * cannot be read. The log reaches the API by its own path (runner → NATS →
 * log projector), so right after FAILED its last chunks may still be on the
 * way: it is read again until two reads agree (or LOG_SETTLE_READS).
 */
async function logTail(context: CliContext, connection: Connection, commandId: string): Promise<string> {
  const read = async () => expectData(await connection.client.GET('/api/v1/commands/{commandId}/logs', { params: { path: { commandId } }, signal: context.signal }))
  try {
    let current = await read()
    for (let reads = 1; reads < LOG_SETTLE_READS; reads++) {
      await context.sleep(LOG_SETTLE_MS, context.signal)
      const next = await read()
      const settled = next.log === current.log && next.log !== ''
      current = next
      if (settled) break
    }
    if (current.log.trim() === '') return `the log is empty so far (later: ffkube logs ${commandId})\n`
    const note = current.truncated ? ' (the log is truncated at its start)' : ''
    return `last ${LOG_TAIL_LINES} lines of the log${note} (all of it: ffkube logs ${commandId}):\n${tail(current.log, LOG_TAIL_LINES)}\n`
  } catch (error) {
    return `the log could not be read: ${error instanceof Error ? error.message : String(error)}\n`
  }
}
