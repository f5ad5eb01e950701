import { useState } from 'preact/hooks'
import { messageOf } from '../api.js'

/**
 * A page's actions: each says what it did (the status line) or why it failed
 * (the error line), and on success the page's data is read again with `reload`.
 */
export function useAction(reload: () => Promise<unknown>, describe: (err: unknown) => string = messageOf) {
  const [error, setError] = useState<string | null>(null)
  const [status, setStatus] = useState<string | null>(null)
  const act = async (action: () => Promise<string>) => {
    setError(null)
    try {
      setStatus(await action())
      await reload()
    } catch (err) {
      setError(describe(err))
    }
  }
  return { act, error, status }
}
