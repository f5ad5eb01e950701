import { useState } from 'preact/hooks'
import { api, expectData } from '../api.js'
import { ErrorNotice, StatusNotice } from '../components/Notice.js'
import { useAction } from '../components/useAction.js'
import { useLoad } from '../components/useLoad.js'
import { formatDate } from '../format.js'

const EMPTY = { name: '', endpoint_url: '', region: '', bucket: '', prefix: '', public_base_url: '', access_key_id: '', secret_access_key: '' }
type Draft = typeof EMPTY

const FIELDS: { name: keyof Draft; label: string; required: boolean; type?: 'text' | 'url' | 'password' }[] = [
  { name: 'name', label: 'Name', required: true },
  { name: 'endpoint_url', label: 'Endpoint URL', required: true, type: 'url' },
  { name: 'region', label: 'Region', required: true },
  { name: 'bucket', label: 'Bucket', required: true },
  { name: 'prefix', label: 'Key prefix (optional)', required: false },
  { name: 'public_base_url', label: 'Public base URL (optional)', required: false, type: 'url' },
  { name: 'access_key_id', label: 'Access key id', required: true },
  { name: 'secret_access_key', label: 'Secret access key', required: true, type: 'password' },
]

/** Storage destinations (Business plan): the account's own buckets, with a connection test. */
export function Destinations() {
  const destinations = useLoad(async () => expectData(await api.GET('/api/v1/storage-destinations', { params: { query: { limit: 100 } } })).storage_destinations)
  const [draft, setDraft] = useState<Draft>(EMPTY)
  const [pathStyle, setPathStyle] = useState(false)
  const { act, error, status } = useAction(() => destinations.reload())
  const create = (event: Event) => {
    event.preventDefault()
    void act(async () => {
      const { access_key_id, secret_access_key, prefix, public_base_url, ...rest } = draft
      const created = expectData(
        await api.POST('/api/v1/storage-destinations', {
          body: { ...rest, ...(prefix ? { prefix } : {}), ...(public_base_url ? { public_base_url } : {}), path_style: pathStyle, credentials: { access_key_id, secret_access_key } },
        }),
      )
      setDraft(EMPTY)
      setPathStyle(false)
      return `Created ${created.storage_destination_id}.`
    })
  }
  return (
    <section aria-labelledby="destinations-title">
      <h1 id="destinations-title">Storage destinations</h1>
      <p>Outputs of commands that name a destination go to your own S3-compatible bucket, under prefix/command_id/filename; the service never deletes them.</p>
      <StatusNotice message={status} />
      <ErrorNotice message={error ?? destinations.error} />
      <table>
        <caption>Destinations of this account</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Bucket</th>
            <th scope="col">Access key</th>
            <th scope="col">State</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(destinations.data ?? []).map((destination) => (
            <tr key={destination.storage_destination_id}>
              <td>
                {destination.name}
                <div class="hint">
                  <code>{destination.storage_destination_id}</code>
                </div>
              </td>
              <td>
                {destination.endpoint_url} · {destination.bucket}
                {destination.prefix && `/${destination.prefix}`}
              </td>
              <td>
                <code>{destination.credentials.access_key_id_masked}</code>
              </td>
              <td>{destination.is_active ? 'active' : `disabled ${formatDate(destination.disabled_at)}`}</td>
              <td class="actions">
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Test the connection of ${destination.name}`}
                  onClick={() =>
                    void act(async () => {
                      const result = expectData(await api.POST('/api/v1/storage-destinations/{storageDestinationId}/test', { params: { path: { storageDestinationId: destination.storage_destination_id } } }))
                      return result.ok ? `${destination.name}: the connection test passed.` : `${destination.name}: the connection test failed: ${result.error}`
                    })
                  }
                >
                  Test connection
                </button>
                {destination.is_active && (
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Disable ${destination.name}`}
                    onClick={() => void act(async () => (expectData(await api.DELETE('/api/v1/storage-destinations/{storageDestinationId}', { params: { path: { storageDestinationId: destination.storage_destination_id } } })), `Disabled ${destination.name}.`))}
                  >
                    Disable
                  </button>
                )}
              </td>
            </tr>
          ))}
          {destinations.data?.length === 0 && (
            <tr>
              <td colSpan={5}>No destinations yet.</td>
            </tr>
          )}
        </tbody>
      </table>
      <form onSubmit={create} class="panel grid" aria-label="New storage destination">
        <h2>New destination</h2>
        {FIELDS.map((field) => (
          <p key={field.name}>
            <label for={`destination-${field.name}`}>{field.label}</label>
            <input
              id={`destination-${field.name}`}
              // Preact's input types tie `type` to a literal per element; the field table holds a union of them.
              {...({ type: field.type ?? 'text' } as { type: 'text' })}
              required={field.required}
              autocomplete="off"
              value={draft[field.name]}
              onInput={(e) => setDraft({ ...draft, [field.name]: e.currentTarget.value })}
            />
          </p>
        ))}
        <p>
          <label class="check">
            <input type="checkbox" checked={pathStyle} onChange={(e) => setPathStyle(e.currentTarget.checked)} /> Path-style addressing (the bucket in the URL path, not the host name)
          </label>
        </p>
        <button type="submit">Create destination</button>
      </form>
    </section>
  )
}
