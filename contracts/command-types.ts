/** The spec's command types, as `command_type` reports them. */
export const COMMAND_TYPES = ['FFMPEG_COMMAND', 'CHAINED_COMMAND', 'MULTIPLE_COMMAND', 'YTDLP_COMMAND'] as const
export type CommandType = (typeof COMMAND_TYPES)[number]

/** A command's status only moves forward: QUEUED → PROCESSING → SUCCESS | FAILED. */
export const COMMAND_STATUSES = ['QUEUED', 'PROCESSING', 'SUCCESS', 'FAILED'] as const
export type CommandStatus = (typeof COMMAND_STATUSES)[number]

const RANK: Record<CommandStatus, number> = { QUEUED: 0, PROCESSING: 1, SUCCESS: 2, FAILED: 2 }

/** SUCCESS and FAILED: the command is finished and its status never changes again. */
export function isTerminalStatus(status: CommandStatus | undefined): boolean {
  return status === 'SUCCESS' || status === 'FAILED'
}

/** True when moving from `from` to `to` goes forward (terminal states never change). */
export function isForwardTransition(from: CommandStatus, to: CommandStatus): boolean {
  return RANK[to] > RANK[from]
}
