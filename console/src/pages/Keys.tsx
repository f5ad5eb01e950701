import { useState } from 'preact/hooks'
import { api, expectData, messageOf } from '../api.js'
import { ErrorNotice, StatusNotice } from '../components/Notice.js'
import { useLoad } from '../components/useLoad.js'
import { formatDate } from '../format.js'
import { useSession } from '../session.js'

/** Writes to the clipboard; false when the browser refuses (then the key is shown to copy by hand). */
async function copyToClipboard(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text)
    return true
  } catch {
    return false
  }
}

/** API keys: listed masked; created; copied (opened on the server on each click); revoked. */
export function Keys() {
  const { session } = useSession()
  const keys = useLoad(async () => expectData(await api.GET('/console/api/keys')).keys)
  const [error, setError] = useState<string | null>(null)
  const [status, setStatus] = useState<string | null>(null)
  /** A key shown in clear because the clipboard refused it, or just created. */
  const [shown, setShown] = useState<{ masked: string; apiKey: string } | null>(null)
  const [confirming, setConfirming] = useState<string | null>(null)

  const act = async (action: () => Promise<void>) => {
    setError(null)
    try {
      await action()
    } catch (err) {
      setError(messageOf(err))
    }
  }
  const create = () =>
    act(async () => {
      const created = expectData(await api.POST('/console/api/keys'))
      setShown({ masked: created.masked, apiKey: created.api_key })
      const copied = await copyToClipboard(created.api_key)
      // The list first, then the announcement: what it announces is on the page when it is read.
      await keys.reload()
      setStatus(`Created key ${created.masked}${copied ? ' and copied it to the clipboard' : ''}.`)
    })
  const copy = (keyId: string, masked: string) =>
    act(async () => {
      const { api_key } = expectData(await api.POST('/console/api/keys/{keyId}/reveal', { params: { path: { keyId } } }))
      if (await copyToClipboard(api_key)) {
        setShown(null)
        setStatus(`Copied key ${masked} to the clipboard.`)
      } else {
        setShown({ masked, apiKey: api_key })
        setStatus(`The browser refused the clipboard: key ${masked} is shown below to copy by hand.`)
      }
    })
  const revoke = (keyId: string, masked: string) =>
    act(async () => {
      expectData(await api.DELETE('/console/api/keys/{keyId}', { params: { path: { keyId } } }))
      setConfirming(null)
      if (shown?.masked === masked) setShown(null)
      await keys.reload()
      setStatus(`Revoked key ${masked}: it gets 401 from now on.`)
    })

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <p>Every request to the API carries one of these keys in X-API-KEY. A new key works at once; a revoked key gets 401 on its next request.</p>
      <button type="button" onClick={() => void create()}>
        Create key
      </button>
      <StatusNotice message={status} />
      <ErrorNotice message={error ?? keys.error} />
      {shown && (
        <div class="revealed">
          <label for="revealed-key">API key {shown.masked}</label>
          <input id="revealed-key" readOnly value={shown.apiKey} onFocus={(e) => e.currentTarget.select()} />
          <button type="button" class="secondary" onClick={() => setShown(null)}>
            Hide key
          </button>
        </div>
      )}
      <table>
        <caption>Keys of this account, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Created</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(keys.data ?? []).map((key) => (
            <tr key={key.key_id}>
              <td>
                <code>{key.masked}</code>
                {key.key_id === session.key_id && <span class="hint"> (signed in with it)</span>}
              </td>
              <td>{formatDate(key.created_at)}</td>
              <td>{key.revoked_at ? `Revoked ${formatDate(key.revoked_at)}` : 'Active'}</td>
              <td class="actions">
                {!key.revoked_at && (
                  <>
                    <button type="button" class="secondary" aria-label={`Copy key ${key.masked}`} onClick={() => void copy(key.key_id, key.masked)}>
                      Copy
                    </button>
                    {confirming === key.key_id ? (
                      <>
                        <button type="button" class="danger" aria-label={`Confirm revoking key ${key.masked}`} onClick={() => void revoke(key.key_id, key.masked)}>
                          Revoke now{key.key_id === session.key_id ? ' and sign out' : ''}
                        </button>
                        <button type="button" class="secondary" aria-label={`Keep key ${key.masked}`} onClick={() => setConfirming(null)}>
                          Keep
                        </button>
                      </>
                    ) : (
                      <button type="button" class="danger" aria-label={`Revoke key ${key.masked}`} onClick={() => setConfirming(key.key_id)}>
                        Revoke
                      </button>
                    )}
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}
