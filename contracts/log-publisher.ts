/**
 * Publishes one log chunk to FFKUBE_LOGS, the one way the runner and the
 * local executor's relay of warm runners do: on the command's log subject,
 * with Nats-Msg-Id = the chunk's id, so a re-sent chunk is stored once. One
 * retry: a chunk is worth less than the tool's time.
 */
import { JSONCodec, type JetStreamClient } from 'nats'
import { logChunkId, logSubject, type LogChunk } from './log-chunks.js'

const codec = JSONCodec<LogChunk>()

export async function publishLogChunk(js: JetStreamClient, chunk: LogChunk): Promise<void> {
  const publish = () => js.publish(logSubject(chunk.command_id), codec.encode(chunk), { msgID: logChunkId(chunk) })
  try {
    await publish()
  } catch {
    await publish()
  }
}
