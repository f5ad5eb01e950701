import { useState } from 'preact/hooks'
import { api, expectData } from '../api.js'
import { ErrorNotice, StatusNotice } from '../components/Notice.js'
import { StatusBadge } from '../components/StatusBadge.js'
import { useAction } from '../components/useAction.js'
import { useLoad } from '../components/useLoad.js'
import { formatDate, formatMegabytes, formatSeconds } from '../format.js'

/** Stored files: list, store one from a URL, delete. */
export function Files() {
  const files = useLoad(async () => expectData(await api.GET('/api/v1/files', { params: { query: { limit: 100 } } })).files)
  const [url, setUrl] = useState('')
  const { act, error, status } = useAction(() => files.reload())
  const store = (event: Event) => {
    event.preventDefault()
    void act(async () => {
      const { file_id } = expectData(await api.POST('/api/v1/files/store-file', { body: { file_url: url.trim() } }))
      setUrl('')
      return `Storing ${file_id}.`
    })
  }
  return (
    <section aria-labelledby="files-title">
      <h1 id="files-title">Files</h1>
      <form onSubmit={store} class="inline" aria-label="Store a file from a URL">
        <label for="file-url">File URL</label>
        <input id="file-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://…" />
        <button type="submit">Store file</button>
      </form>
      <StatusNotice message={status} />
      <ErrorNotice message={error ?? files.error} />
      <table>
        <caption>Stored files, newest first</caption>
        <thead>
          <tr>
            <th scope="col">File</th>
            <th scope="col">Status</th>
            <th scope="col">Kind</th>
            <th scope="col">Media</th>
            <th scope="col">Size</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(files.data ?? []).map((file) => (
            <tr key={file.file_id}>
              <td>
                {file.storage_url ? (
                  <a href={file.storage_url} aria-label={`Download ${file.file_id}`}>
                    <code>{file.file_id}</code>
                  </a>
                ) : (
                  <code>{file.file_id}</code>
                )}
              </td>
              <td>
                <StatusBadge status={file.status} />
                {file.error_status && <span class="hint"> {file.error_status}</span>}
              </td>
              <td>{file.service_store_type}</td>
              <td>{[file.file_type, file.codec, file.width && file.height ? `${file.width}×${file.height}` : null, file.duration ? formatSeconds(file.duration) : null].filter(Boolean).join(' · ') || '—'}</td>
              <td>
                {formatMegabytes(file.size_mbytes)}
                {file.file_count > 1 && <span class="hint"> in {file.file_count} files</span>}
              </td>
              <td>{formatDate(file.created_at)}</td>
              {/* Retention deletes it then (its plan's, or its command's retention_days); null: kept until deleted. */}
              <td>{file.expires_at ? formatDate(file.expires_at) : 'never'}</td>
              <td>
                <button
                  type="button"
                  class="danger"
                  aria-label={`Delete file ${file.file_id}`}
                  onClick={() => void act(async () => (expectData(await api.DELETE('/api/v1/files/{fileId}', { params: { path: { fileId: file.file_id } } })).deleted ? `Deleted ${file.file_id}.` : `${file.file_id} is in an external bucket: left unchanged.`))}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
          {files.data?.length === 0 && (
            <tr>
              <td colSpan={8}>No files yet.</td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  )
}
