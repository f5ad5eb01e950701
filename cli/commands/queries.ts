/** `ffkube status`, `list`, `cancel` and `logs`: one request each, printed. */
import { expectData, type CommandStatus } from '../../client/index.js'
import type { CliContext } from '../context.js'
import { EXIT, UsageError } from '../errors.js'
import { describeCommand, table, tail } from '../format.js'
import { parseWholeNumber } from '../pairs.js'
import { stageOf } from '../progress-display.js'

const STATUSES: readonly CommandStatus[] = ['QUEUED', 'PROCESSING', 'SUCCESS', 'FAILED']

/** Prints a command; exits 1 when it ended FAILED, so a script can branch on it. */
export async function statusAction(context: CliContext, commandId: string, options: { json: boolean }): Promise<number> {
  const { client } = await context.connect()
  const command = expectData(await client.GET('/api/v1/commands/{commandId}', { params: { path: { commandId } }, signal: context.signal }))
  context.out(options.json ? `${JSON.stringify(command, null, 2)}\n` : describeCommand(command))
  return command.status === 'FAILED' ? EXIT.FAILED : EXIT.OK
}

export async function listAction(context: CliContext, options: { status?: string; limit?: string; offset?: string; json: boolean }): Promise<number> {
  const status = options.status?.toUpperCase()
  if (status !== undefined && !STATUSES.includes(status as CommandStatus)) throw new UsageError(`--status takes one of ${STATUSES.join(', ')}, got "${options.status}"`)
  const query = {
    ...(status === undefined ? {} : { status: status as CommandStatus }),
    ...(options.limit === undefined ? {} : { limit: parseWholeNumber(options.limit, '--limit', 1, 100) }),
    ...(options.offset === undefined ? {} : { offset: parseWholeNumber(options.offset, '--offset', 0, Number.MAX_SAFE_INTEGER) }),
  }
  const { client } = await context.connect()
  const page = expectData(await client.GET('/api/v1/commands', { params: { query }, signal: context.signal }))
  if (options.json) {
    context.out(`${JSON.stringify(page, null, 2)}\n`)
    return EXIT.OK
  }
  const rows = page.commands.map((command) => [
    command.command_id,
    stageOf(command),
    command.command_type,
    command.progress === null ? '' : `${Math.floor(command.progress)}%`,
    command.error_status ?? '',
  ])
  context.out(table([['COMMAND', 'STATE', 'TYPE', 'PROGRESS', 'ERROR'], ...rows]))
  if (page.commands.length === page.limit) context.err(`more may follow: --offset ${page.offset + page.limit}\n`)
  return EXIT.OK
}

export async function cancelAction(context: CliContext, commandId: string): Promise<number> {
  const { client } = await context.connect()
  const answer = expectData(await client.POST('/api/v1/commands/{commandId}/cancel', { params: { path: { commandId } }, signal: context.signal }))
  context.out(`${answer.command_id} cancelled (it ends ${answer.status}, error_status CANCELLED)\n`)
  return EXIT.OK
}

export async function logsAction(context: CliContext, commandId: string, options: { tail?: string }): Promise<number> {
  const lines = options.tail === undefined ? null : parseWholeNumber(options.tail, '--tail', 1, 1_000_000)
  const { client } = await context.connect()
  const { log, truncated, status } = expectData(await client.GET('/api/v1/commands/{commandId}/logs', { params: { path: { commandId } }, signal: context.signal }))
  if (truncated) context.err('the log is truncated at its start: the service keeps the last 256 KiB\n')
  if (status === 'QUEUED' || status === 'PROCESSING') context.err(`the command is ${status}: the log so far\n`)
  const text = lines === null ? log : tail(log, lines)
  context.out(text === '' || text.endsWith('\n') ? text : `${text}\n`)
  return EXIT.OK
}
