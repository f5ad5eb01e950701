import { useState } from 'preact/hooks'
import { api, expectData } from '../api.js'
import { ErrorNotice, StatusNotice } from '../components/Notice.js'
import { useAction } from '../components/useAction.js'
import { useLoad } from '../components/useLoad.js'
import { formatDate } from '../format.js'

/** The account's cookies.txt for its yt-dlp downloads: what it covers, a form to replace it, and delete. The cookies are never shown. */
export function Cookies() {
  const stored = useLoad(async () => {
    const result = await api.GET('/api/v1/ytdlp-cookies')
    // None stored yet: a 404, shown as an empty form.
    if (result.response.status === 404) return null
    return expectData(result)
  })
  const [text, setText] = useState('')
  const { act, error, status } = useAction(() => stored.reload())
  const save = (event: Event) => {
    event.preventDefault()
    void act(async () => {
      const saved = expectData(await api.PUT('/api/v1/ytdlp-cookies', { body: { cookies: text } }))
      // The page keeps no copy once the service has it.
      setText('')
      return `Stored ${saved.cookie_count} cookie${saved.cookie_count === 1 ? '' : 's'} for ${saved.domains.join(', ')}.`
    })
  }
  const readFile = (event: Event) => {
    const file = (event.currentTarget as HTMLInputElement).files?.[0]
    if (file) void file.text().then(setText)
  }
  const current = stored.data
  return (
    <section aria-labelledby="cookies-title">
      <h1 id="cookies-title">yt-dlp cookies</h1>
      <p>
        A Netscape <code>cookies.txt</code> (as browser &ldquo;cookies.txt&rdquo; extensions export it) that this account&rsquo;s yt-dlp downloads send to the sites
        it names, for sign-in walls and bot checks. It is stored encrypted, used by no other account, and never shown again.
      </p>
      {current ? (
        <dl class="facts">
          <dt>Cookies</dt>
          <dd>{current.cookie_count}</dd>
          <dt>Domains</dt>
          <dd>{current.domains.join(', ')}</dd>
          <dt>Updated</dt>
          <dd>{formatDate(current.updated_at)}</dd>
        </dl>
      ) : (
        <p>No cookies are stored: yt-dlp downloads run without cookies.</p>
      )}
      <form onSubmit={save} class="panel" aria-label="yt-dlp cookies">
        <p>
          <label for="cookies-file">cookies.txt file</label>
          <input id="cookies-file" type="file" accept=".txt,text/plain" onChange={readFile} />
        </p>
        <p>
          <label for="cookies-text">or its content</label>
          <textarea id="cookies-text" rows={6} required autocomplete="off" spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </p>
        <button type="submit">{current ? 'Replace cookies' : 'Store cookies'}</button>
        {current && (
          <button type="button" class="danger" onClick={() => void act(async () => (expectData(await api.DELETE('/api/v1/ytdlp-cookies')), 'Cookies deleted.'))}>
            Delete cookies
          </button>
        )}
      </form>
      <StatusNotice message={status} />
      <ErrorNotice message={error ?? stored.error} />
    </section>
  )
}
