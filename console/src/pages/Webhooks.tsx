import { useState } from 'preact/hooks'
import { api, ApiError, expectData, messageOf } from '../api.js'
import { ErrorNotice, StatusNotice } from '../components/Notice.js'
import { useAction } from '../components/useAction.js'
import { useLoad } from '../components/useLoad.js'
import { formatDate } from '../format.js'
import { href } from '../router.js'

/** The account webhook (URL, secret, state) and its delivery log, with redelivery. */
export function Webhooks() {
  const config = useLoad(async () => {
    const result = await api.GET('/api/v1/webhook-config')
    // No webhook configured yet: a 404, shown as an empty form.
    if (result.response.status === 404) return null
    return expectData(result)
  })
  const deliveries = useLoad(async () => expectData(await api.GET('/api/v1/webhook-deliveries', { params: { query: { limit: 50 } } })).deliveries)
  const [url, setUrl] = useState('')
  const [secret, setSecret] = useState('')
  const { act, error, status } = useAction(() => Promise.all([config.reload(), deliveries.reload()]), (err) => (err instanceof ApiError && err.status === 409 ? err.message : messageOf(err)))
  const save = (event: Event) => {
    event.preventDefault()
    void act(async () => {
      expectData(await api.PUT('/api/v1/webhook-config', { body: { url: url.trim(), ...(secret ? { secret } : {}) } }))
      setSecret('')
      return 'Webhook saved and active.'
    })
  }
  const current = config.data
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {current ? (
        <dl class="facts">
          <dt>URL</dt>
          <dd>
            <code>{current.url}</code>
          </dd>
          <dt>State</dt>
          <dd>{current.is_active ? 'active' : `inactive${current.disabled_at ? ` since ${formatDate(current.disabled_at)}` : ''}`}</dd>
          <dt>Consecutive failures</dt>
          <dd>{current.consecutive_failures}</dd>
          <dt>Signed</dt>
          <dd>{current.has_secret ? 'yes (X-Webhook-Signature)' : 'no secret set'}</dd>
        </dl>
      ) : (
        <p>No account webhook is configured.</p>
      )}
      <form onSubmit={save} class="panel" aria-label="Webhook configuration">
        <p>
          <label for="webhook-url">Webhook URL</label>
          <input id="webhook-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder={current?.url ?? 'https://…'} />
        </p>
        <p>
          <label for="webhook-secret">Signing secret (optional)</label>
          <input id="webhook-secret" type="password" autocomplete="off" value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
        </p>
        <button type="submit">Save webhook</button>
        {current?.is_active && (
          <button type="button" class="danger" onClick={() => void act(async () => (expectData(await api.DELETE('/api/v1/webhook-config')), 'Webhook deactivated.'))}>
            Deactivate webhook
          </button>
        )}
      </form>
      <StatusNotice message={status} />
      <ErrorNotice message={error ?? config.error ?? deliveries.error} />
      <table>
        <caption>Delivery attempts, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Command</th>
            <th scope="col">Attempt</th>
            <th scope="col">Target</th>
            <th scope="col">Outcome</th>
            <th scope="col">When</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(deliveries.data ?? []).map((attempt) => (
            <tr key={`${attempt.delivery_id}-${attempt.attempt}`}>
              <td>
                <a href={href(`commands/${attempt.command_id}`)}>
                  <code>{attempt.command_id}</code>
                </a>
              </td>
              <td>{attempt.attempt}</td>
              <td>{attempt.target}</td>
              <td>
                {attempt.outcome}
                {attempt.status_code ? ` (HTTP ${attempt.status_code})` : ''}
                {attempt.error && <div class="hint">{attempt.error}</div>}
              </td>
              <td>{formatDate(attempt.finished_at)}</td>
              <td>
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Redeliver the webhook of ${attempt.command_id}`}
                  onClick={() => void act(async () => `Redelivery queued (${expectData(await api.POST('/api/v1/commands/{commandId}/webhook/redeliver', { params: { path: { commandId: attempt.command_id } } })).delivery_id}).`)}
                >
                  Redeliver
                </button>
              </td>
            </tr>
          ))}
          {deliveries.data?.length === 0 && (
            <tr>
              <td colSpan={6}>No deliveries yet.</td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  )
}
