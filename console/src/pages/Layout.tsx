import type { ComponentChildren } from 'preact'
import { href } from '../router.js'
import { useSession } from '../session.js'

const PAGES: { path: string; label: string; business?: boolean; videoDownloads?: boolean }[] = [
  { path: 'commands', label: 'Commands' },
  { path: 'keys', label: 'API keys' },
  { path: 'files', label: 'Files' },
  { path: 'presets', label: 'Presets' },
  { path: 'webhooks', label: 'Webhooks' },
  { path: 'destinations', label: 'Storage destinations', business: true },
  { path: 'cookies', label: 'yt-dlp cookies', videoDownloads: true },
  { path: 'account', label: 'Plan and usage' },
]

/** The signed-in frame: the account, the page list, sign-out. */
export function Layout({ current, children }: { current: string; children: ComponentChildren }) {
  const { session, signOut } = useSession()
  return (
    <div class="layout">
      <header>
        <span class="brand">ffkube console</span>
        <span class="account" aria-label="Signed-in account">
          {session.account_name ?? session.account_id} · <span class="plan">{session.plan}</span> plan
        </span>
        <button type="button" class="secondary" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <nav aria-label="Console pages">
        <ul>
          {PAGES.filter((page) => (!page.business || session.features.business_features) && (!page.videoDownloads || session.features.video_downloads)).map((page) => (
            <li key={page.path}>
              <a href={href(page.path)} aria-current={current === page.path ? 'page' : undefined}>
                {page.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main>{children}</main>
    </div>
  )
}
