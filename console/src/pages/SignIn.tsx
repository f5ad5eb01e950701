import { useState } from 'preact/hooks'
import { api, expectData, messageOf } from '../api.js'
import { ErrorNotice } from '../components/Notice.js'
import type { ConsoleSession } from '../session.js'

/** A sign-in attempt: busy while it runs, its failure told. */
function useSignInAttempt() {
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const attempt = async (work: () => Promise<void>) => {
    setBusy(true)
    try {
      await work()
    } catch (err) {
      setError(messageOf(err))
    } finally {
      setBusy(false)
    }
  }
  return { error, busy, attempt }
}

/** Sign-in with one of the account's API keys: sent in a POST body, kept nowhere in the page afterwards. */
export function SignIn({ onSignedIn }: { onSignedIn: (session: ConsoleSession) => void }) {
  const [apiKey, setApiKey] = useState('')
  const { error, busy, attempt } = useSignInAttempt()
  const submit = (event: Event) => {
    event.preventDefault()
    return attempt(async () => {
      const session = expectData(await api.POST('/console/api/session', { body: { api_key: apiKey.trim() } }))
      setApiKey('')
      onSignedIn(session)
    })
  }
  return (
    <main class="sign-in">
      <h1>ffkube console</h1>
      <form onSubmit={(event) => void submit(event)} aria-label="Sign in">
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="off" spellcheck={false} placeholder="ffsk_…" value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} required />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <ErrorNotice message={error} />
      <p class="hint">
        No key at hand? An administrator can print a one-time sign-in link: <code>npm run -s admin -- console-link --account ID</code>
      </p>
    </main>
  )
}

/**
 * The page a one-time sign-in link opens. The token is in the fragment (never
 * sent to a server by the GET) and used only when the user presses the
 * button: a link prefetcher or scanner that opens the link cannot use it up.
 */
export function SignInWithLink({ token, onSignedIn }: { token: string; onSignedIn: (session: ConsoleSession) => void }) {
  const { error, busy, attempt } = useSignInAttempt()
  const use = () =>
    attempt(async () => {
      const session = expectData(await api.POST('/console/api/session/link', { body: { token } }))
      onSignedIn(session)
      // The token is spent: replace it in the address bar and history (and move on to the commands).
      window.location.replace(`${window.location.pathname}#/commands`)
    })
  return (
    <main class="sign-in">
      <h1>ffkube console</h1>
      <p>This one-time link signs this browser in to the console. It works once and expires 10 minutes after it was made.</p>
      <button type="button" onClick={() => void use()} disabled={busy}>
        Sign in with this link
      </button>
      <ErrorNotice message={error} />
      <p>
        <a href="#/">Sign in with an API key instead</a>
      </p>
    </main>
  )
}
