/** The first bytes of a file, without reading the rest: list and subtitle checks judge a file by its head. */
import { open } from 'node:fs/promises'

/** Up to `bytes` bytes from the start of the file at `path`. */
export async function readHead(path: string, bytes: number): Promise<Buffer> {
  const handle = await open(path, 'r')
  try {
    const buffer = Buffer.alloc(bytes)
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}
