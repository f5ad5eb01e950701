import { setImmediate as settle } from 'node:timers/promises'
import type { CommandDraft } from '../../api/commands/drafts.js'
import type { TestApi } from '../harness/api.js'

/** A valid run-ffmpeg-command body; its input is never fetched by the dispatcher tests. */
export const COMMAND_BODY = {
  input_files: { in_video: 'https://media.example.com/clip.mp4' },
  output_files: { out_small: 'small.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_small}}',
}

/** The draft of such a command, for tests and benchmarks that insert records as submission does. */
export const COMMAND_DRAFT: CommandDraft = {
  command_type: 'FFMPEG_COMMAND',
  input_files: COMMAND_BODY.input_files,
  output_files: COMMAND_BODY.output_files,
  ffmpeg_commands: [COMMAND_BODY.ffmpeg_command],
  ytdlp: null,
  metadata: null,
  webhook_url: null,
  storage_destination_id: null,
  original_request: COMMAND_BODY,
}

/** Submits `count` commands through the API; returns their ids in order. */
export async function submit(api: TestApi, key: string, count = 1): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const res = await api.app.inject({ method: 'POST', url: '/api/v1/run-ffmpeg-command', headers: { 'x-api-key': key }, payload: COMMAND_BODY })
    ids.push(res.json().command_id)
  }
  return ids
}


/**
 * Runs the steps of several concurrent actors one at a time, in an order a
 * seeded PRNG picks. An actor hands each step (one write, one call) to
 * `step` and waits for it; the scheduler waits until every actor that can
 * has asked for its next step (the code between steps does no I/O, so one
 * turn of the event loop is enough), then runs one of the waiting steps at
 * random. No wall-clock race decides the order: only the seed.
 */
export class SeededScheduler {
  readonly #random: () => number
  readonly #waiting: Array<() => Promise<void>> = []
  #running = false
  /** Steps run so far. */
  steps = 0

  constructor(random: () => number) {
    this.#random = random
  }

  step<T>(work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push(() => work().then(resolve, reject))
      if (!this.#running) void this.#run()
    })
  }

  async #run(): Promise<void> {
    this.#running = true
    for (;;) {
      await settle()
      if (this.#waiting.length === 0) break
      const [next] = this.#waiting.splice(Math.floor(this.#random() * this.#waiting.length), 1)
      this.steps += 1
      await next!()
    }
    this.#running = false
  }
}
