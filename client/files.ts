import { expectData } from './api-error.js'
import type { FfkubeClient, StoredFile } from './index.js'

/**
 * POST /api/v1/files/upload: sends `file` (a Blob; a browser File is one) as
 * the multipart field `file` and answers its file_id. The generated type
 * describes the form as `{ file: string }` (OpenAPI's binary format), so the
 * FormData is passed through as the body unchanged.
 */
export async function uploadFile(client: FfkubeClient, file: Blob, filename: string): Promise<{ file_id: string }> {
  const form = new FormData()
  form.append('file', file, filename)
  return expectData(await client.POST('/api/v1/files/upload', { body: form as unknown as { file: string }, bodySerializer: (body) => body }))
}

/** Polls GET /api/v1/files/{fileId} until the file is STORED or FAILED. `sleep` is injected so tests and UIs choose the pace. */
export async function waitForFile(client: FfkubeClient, fileId: string, sleep: (ms: number) => Promise<void>, intervalMs = 500): Promise<StoredFile> {
  for (;;) {
    const file = expectData(await client.GET('/api/v1/files/{fileId}', { params: { path: { fileId } } }))
    if (file.status !== 'PROCESSING') return file
    await sleep(intervalMs)
  }
}
