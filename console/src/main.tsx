/**
 * The ffkube web console: Preact, bundled by esbuild (scripts/build-console.sh),
 * served by the API role at /console/. Hash routing: the server serves one page.
 */
import { render } from 'preact'
import { useCallback, useEffect, useState } from 'preact/hooks'
import { api, setCsrfToken, whenSessionEnds } from './api.js'
import { Account } from './pages/Account.js'
import { CommandDetail } from './pages/CommandDetail.js'
import { Commands } from './pages/Commands.js'
import { Cookies } from './pages/Cookies.js'
import { Destinations } from './pages/Destinations.js'
import { Files } from './pages/Files.js'
import { Keys } from './pages/Keys.js'
import { Layout } from './pages/Layout.js'
import { Presets } from './pages/Presets.js'
import { SignIn, SignInWithLink } from './pages/SignIn.js'
import { Webhooks } from './pages/Webhooks.js'
import { navigate, useRoute } from './router.js'
import { SessionContext, type ConsoleSession } from './session.js'

function Page({ route }: { route: string[] }) {
  const [page, id] = route
  switch (page) {
    case 'keys':
      return <Keys />
    case 'commands':
      return id ? <CommandDetail commandId={id} /> : <Commands />
    case 'files':
      return <Files />
    case 'presets':
      return <Presets />
    case 'webhooks':
      return <Webhooks />
    case 'destinations':
      return <Destinations />
    case 'cookies':
      return <Cookies />
    case 'account':
      return <Account />
    default:
      return <Commands />
  }
}

function App() {
  const route = useRoute()
  /** undefined while the first session check runs; null when signed out. */
  const [session, setSession] = useState<ConsoleSession | null | undefined>(undefined)
  const signedIn = useCallback((next: ConsoleSession | null) => {
    setCsrfToken(next?.csrf_token ?? null)
    setSession(next)
  }, [])

  useEffect(() => {
    whenSessionEnds(() => signedIn(null))
    void api.GET('/console/api/session').then((result) => signedIn(result.data ?? null), () => signedIn(null))
  }, [signedIn])

  const signOut = useCallback(async () => {
    await api.DELETE('/console/api/session')
    signedIn(null)
    navigate('')
  }, [signedIn])

  if (route[0] === 'sign-in' && route[1] === 'link' && route[2]) return <SignInWithLink token={route[2]} onSignedIn={signedIn} />
  if (session === undefined) return <p role="status">Loading…</p>
  if (session === null) return <SignIn onSignedIn={signedIn} />
  const current = route[0] ?? 'commands'
  return (
    <SessionContext.Provider value={{ session, signOut }}>
      <Layout current={current === 'sign-in' ? 'commands' : current}>
        <Page route={route} />
      </Layout>
    </SessionContext.Provider>
  )
}

render(<App />, document.getElementById('root')!)
