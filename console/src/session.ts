import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import type { ResponseBody } from '../../client/index.js'

/** GET /console/api/session: the signed-in account, its plan and the CSRF token. */
export type ConsoleSession = ResponseBody<'/console/api/session', 'get'>

export interface SessionState {
  session: ConsoleSession
  signOut(): Promise<void>
}

export const SessionContext = createContext<SessionState | null>(null)

/** The signed-in session; only pages inside the signed-in layout call it. */
export function useSession(): SessionState {
  const state = useContext(SessionContext)
  if (!state) throw new Error('useSession outside a signed-in page')
  return state
}
