/**
 * How a client outside the service learns that its command ended, for the
 * benchmarks that measure submit → SUCCESS from the client's side: polling
 * GET /commands/:id at a fixed interval (what most clients do), or reading
 * the Server-Sent Events of GET /commands/:id/events (the push a demanding
 * client uses). Both time from just before the submit to the moment the
 * terminal state is seen through the API, and return the record as seen.
 */
import type { Client, RunningService } from '../test/e2e/service.js'

/** A command's record as GET /commands/:id returns it (the fields the benchmarks read). */
export interface SeenCommand {
  command_id: string
  status: string
  ffmpeg_command_run_seconds: number | null
  error_message?: string | null
}

/** How long the client took to see its command end, and what it saw. */
export interface ClientView {
  ms: number
  command: SeenCommand
  /** performance.now() when the submit returned, for splitting the time. */
  acceptedAt: number
  startedAt: number
}

const TERMINAL = new Set(['SUCCESS', 'FAILED'])

function ended(command: SeenCommand): SeenCommand {
  if (command.status !== 'SUCCESS') throw new Error(`command ${command.command_id} ended ${command.status}: ${command.error_message ?? ''}`)
  return command
}

/** Submits `body` to POST /run-ffmpeg-command, then polls GET every `intervalMs` until the command is terminal. */
export async function submitAndPoll(api: Client, body: unknown, intervalMs: number): Promise<ClientView> {
  const startedAt = performance.now()
  const { command_id } = (await api.post('/run-ffmpeg-command', body)) as { command_id: string }
  const acceptedAt = performance.now()
  for (;;) {
    const answer = await api.request('GET', `/commands/${command_id}`)
    const command = answer.body as SeenCommand
    if (answer.status === 200 && TERMINAL.has(command.status)) return { ms: performance.now() - startedAt, command: ended(command), acceptedAt, startedAt }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/** Submits `body`, then opens GET /commands/:id/events and reads events until a terminal one. */
export async function submitAndStream(service: RunningService, api: Client, body: unknown): Promise<ClientView> {
  const startedAt = performance.now()
  const { command_id } = (await api.post('/run-ffmpeg-command', body)) as { command_id: string }
  const acceptedAt = performance.now()
  const response = await fetch(`${service.baseUrl}/api/v1/commands/${command_id}/events`, { headers: { 'x-api-key': service.apiKey } })
  if (response.status !== 200 || !response.body) throw new Error(`the event stream of ${command_id} answered ${response.status}`)
  const decoder = new TextDecoder()
  let buffered = ''
  // Leaving the loop (return) cancels the stream.
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true })
    for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
      const event = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      const data = event.split('\n').find((line) => line.startsWith('data: '))
      if (!data) continue
      const command = JSON.parse(data.slice('data: '.length)) as SeenCommand
      if (TERMINAL.has(command.status)) return { ms: performance.now() - startedAt, command: ended(command), acceptedAt, startedAt }
    }
  }
  throw new Error(`the event stream of ${command_id} ended before the command did`)
}
