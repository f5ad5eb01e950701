/**
 * How a followed command is shown: on a terminal, a cli-progress bar with
 * the percentage and the stage (QUEUED, FETCHING, RUNNING, UPLOADING, …, then
 * SUCCESS or FAILED); elsewhere (a pipe, CI), one plain line per change of
 * stage and per 10 % of progress.
 */
import cliProgress from 'cli-progress'
import type { CommandPollResponse } from '../client/index.js'

export interface ProgressDisplay {
  update(command: CommandPollResponse): void
  /** Leaves the last state on screen; the next output starts on a fresh line. */
  stop(): void
}

/** What the display calls the state: the stage while PROCESSING, else the status. Pure. */
export function stageOf(command: Pick<CommandPollResponse, 'status' | 'processing_stage'>): string {
  return command.status === 'PROCESSING' && command.processing_stage ? command.processing_stage : command.status
}

/** A bar on `stream`, a TTY; `initialStage` until the first event (QUEUED right after a submit). */
export function barDisplay(stream: NodeJS.WriteStream, commandId: string, initialStage: string): ProgressDisplay {
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: '{bar} {percentage}% | {stage}',
      barsize: 30,
      hideCursor: true,
      // Redraw on each event as well as on the timer: short stages still show.
      synchronousUpdate: true,
      // The width follows the terminal; a narrow one truncates rather than wraps.
      linewrap: false,
    },
    cliProgress.Presets.shades_classic,
  )
  let percent = 0
  // The id on its own line, so a narrow terminal never truncates it.
  stream.write(`command ${commandId}\n`)
  bar.start(100, 0, { stage: initialStage })
  return {
    update(command) {
      // null: not known yet (an input without a duration); keep what was shown.
      if (command.progress !== null) percent = Math.floor(command.progress)
      if (command.status === 'SUCCESS') percent = 100
      bar.update(percent, { stage: stageOf(command) })
    },
    stop: () => bar.stop(),
  }
}

/** Plain lines on `write` (stderr when it is not a TTY). */
export function lineDisplay(write: (text: string) => void, commandId: string): ProgressDisplay {
  let last = ''
  return {
    update(command) {
      const decile = command.progress === null ? null : Math.floor(command.progress / 10) * 10
      const line = `${commandId} ${stageOf(command)}${decile === null ? '' : ` ${decile}%`}`
      if (line !== last) write(`${line}\n`)
      last = line
    },
    stop: () => undefined,
  }
}
