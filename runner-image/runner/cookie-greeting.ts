/**
 * The one message the hand-over socket carries (hand-over.ts), in a pod only:
 * the upload container, which alone mounts the account's cookies Secret,
 * sends the cookies.txt to the run process as it connects, framed as
 * `<byte length>\n<text>`; a length of 0 means the account stored none.
 */
import type { Socket } from 'node:net'

/** A cookies.txt is at most 128 Ki characters (api/ytdlp-cookies/netscape-cookies.ts), up to 4 bytes each. */
const MAX_GREETING_BYTES = 512 * 1024

export function greetingFrame(text: string): Buffer {
  const body = Buffer.from(text, 'utf8')
  return Buffer.concat([Buffer.from(`${body.length}\n`), body])
}

/** Reads one frame from the socket; rejects when it closes first or the frame is malformed. */
export function readGreeting(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0)
    const fail = (reason: string) => {
      socket.off('data', onData)
      reject(new Error(reason))
    }
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const newline = received.indexOf(0x0a)
      if (newline < 0) {
        if (received.length > 12) fail('the greeting does not start with its length')
        return
      }
      const length = Number(received.subarray(0, newline).toString('ascii'))
      if (!Number.isSafeInteger(length) || length < 0 || length > MAX_GREETING_BYTES) return fail('the greeting has no valid length')
      if (received.length - newline - 1 < length) return
      socket.off('data', onData)
      resolve(received.subarray(newline + 1, newline + 1 + length).toString('utf8'))
    }
    socket.on('data', onData)
    socket.once('close', () => fail('the connection closed before the greeting'))
  })
}
