import { useCallback, useEffect, useState } from 'preact/hooks'
import { messageOf } from '../api.js'

/** Loads data with `load` on mount and on reload(); the error message when it failed. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [data, setData] = useState<T | null>(null)
  const [error, setError] = useState<string | null>(null)
  const reload = useCallback(async () => {
    try {
      setData(await load())
      setError(null)
    } catch (err) {
      setError(messageOf(err))
    }
  }, deps)
  useEffect(() => {
    void reload()
  }, [reload])
  return { data, error, reload, setData }
}
