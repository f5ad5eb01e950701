import { useEffect, useState } from 'preact/hooks'

/** The page the location's fragment names: `#/commands/cmd_…` → ['commands', 'cmd_…']. */
export function routeOf(hash: string): string[] {
  return hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent)
}

/** The current route, following hash changes (hash routing: the server serves one page). */
export function useRoute(): string[] {
  const [route, setRoute] = useState(() => routeOf(window.location.hash))
  useEffect(() => {
    const follow = () => setRoute(routeOf(window.location.hash))
    window.addEventListener('hashchange', follow)
    return () => window.removeEventListener('hashchange', follow)
  }, [])
  return route
}

export function navigate(path: string): void {
  window.location.hash = `#/${path}`
}

/** An href for a console page. */
export function href(path: string): string {
  return `#/${path}`
}
