import { setTimeout as delay } from 'node:timers/promises'
import type { TestApi } from '../harness/api.js'

/** A valid run-ffmpeg-command body; its input is never fetched by the dispatcher tests. */
export const COMMAND_BODY = {
  input_files: { in_video: 'https://media.example.com/clip.mp4' },
  output_files: { out_small: 'small.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_small}}',
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

/** Resolves once `condition` holds; throws after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await delay(10)
  }
}
