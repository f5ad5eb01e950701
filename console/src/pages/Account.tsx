import type { Usage } from '../../../client/index.js'
import { api, expectData } from '../api.js'
import { ErrorNotice } from '../components/Notice.js'
import { useLoad } from '../components/useLoad.js'
import { formatBytes, formatDate, formatSeconds } from '../format.js'
import { useSession } from '../session.js'

/** The share of the quota in use, to a tenth of a percent. */
function storageShare(stored: number, quota: number): string {
  return `${((stored / quota) * 100).toFixed(1)} %`
}

/** Usage by UTC day, newest first, with the window's totals in the footer. */
function UsageTable({ usage }: { usage: Usage }) {
  const days = [...usage.by_day].reverse()
  return (
    <table>
      <caption>
        Usage by UTC day from {usage.from.slice(0, 10)} to {usage.to.slice(0, 10)}
      </caption>
      <thead>
        <tr>
          <th scope="col">Day</th>
          <th scope="col">Commands</th>
          <th scope="col">Succeeded</th>
          <th scope="col">Failed</th>
          <th scope="col">FFmpeg time</th>
          <th scope="col">Processing time</th>
          <th scope="col">Stored at day's end</th>
        </tr>
      </thead>
      <tbody>
        {days.map((day) => (
          <tr key={day.date}>
            <th scope="row">{day.date}</th>
            <td>{day.commands}</td>
            <td>{day.commands_succeeded}</td>
            <td>{day.commands_failed}</td>
            <td>{formatSeconds(day.ffmpeg_seconds)}</td>
            <td>{formatSeconds(day.total_seconds)}</td>
            <td>
              {formatBytes(day.bytes_stored)} in {day.files_stored} files
            </td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr>
          <th scope="row">Total</th>
          <td>{usage.totals.commands}</td>
          <td>{usage.totals.commands_succeeded}</td>
          <td>{usage.totals.commands_failed}</td>
          <td>{formatSeconds(usage.totals.ffmpeg_seconds)}</td>
          <td>{formatSeconds(usage.totals.total_seconds)}</td>
          <td />
        </tr>
      </tfoot>
    </table>
  )
}

/** The plan, what it allows, its rate limit, its storage against the quota, and usage by day over the last 30 days. */
export function Account() {
  const { session } = useSession()
  const usage = useLoad(async () => expectData(await api.GET('/console/api/usage')))
  const data = usage.data
  return (
    <section aria-labelledby="account-title">
      <h1 id="account-title">Plan and usage</h1>
      <dl class="facts">
        <dt>Account</dt>
        <dd>
          <code>{session.account_id}</code>
        </dd>
        <dt>Plan</dt>
        <dd aria-label="Plan">{session.plan}</dd>
        <dt>Rate limit</dt>
        <dd>{session.rate_limit_per_minute === 0 ? 'unlimited' : `${session.rate_limit_per_minute} requests per minute per API key`}</dd>
        <dt>Video downloads (yt-dlp)</dt>
        <dd>{session.features.video_downloads ? 'included' : 'not on this plan'}</dd>
        <dt>Webhook per command, storage destinations</dt>
        <dd>{session.features.business_features ? 'included' : 'Business plan only'}</dd>
        <dt>Session</dt>
        <dd>
          signed in with {session.signed_in_with === 'api_key' ? 'an API key' : 'a sign-in link'}; ends {formatDate(session.expires_at)} unless used
        </dd>
      </dl>
      <h2>Storage</h2>
      <ErrorNotice message={usage.error} />
      {data && (
        <p aria-label="Storage">
          {formatBytes(data.storage.stored_bytes)} stored of{' '}
          {data.storage.quota_bytes === null ? 'an unlimited quota' : `the plan's ${formatBytes(data.storage.quota_bytes)} quota (${storageShare(data.storage.stored_bytes, data.storage.quota_bytes)})`}. Uploads
          and outputs in managed storage count; storage destinations (your own buckets) do not.
        </p>
      )}
      <h2>Last 30 days</h2>
      {data && <UsageTable usage={data} />}
    </section>
  )
}
