import { api, expectData } from '../api.js'
import { ErrorNotice } from '../components/Notice.js'
import { useLoad } from '../components/useLoad.js'
import { formatBytes, formatDate, formatSeconds } from '../format.js'
import { useSession } from '../session.js'

/** The plan, what it allows, its rate limit, and usage over the last 30 days. */
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
      <h2>Last 30 days</h2>
      <ErrorNotice message={usage.error} />
      {data && (
        <table>
          <caption>
            Usage from {formatDate(data.from)} to {formatDate(data.to)}
          </caption>
          <tbody>
            <tr>
              <th scope="row">Commands</th>
              <td>
                {data.commands.total} ({data.commands.by_status.SUCCESS} succeeded, {data.commands.by_status.FAILED} failed, {data.commands.by_status.QUEUED + data.commands.by_status.PROCESSING} pending)
              </td>
            </tr>
            <tr>
              <th scope="row">Processing time</th>
              <td>{formatSeconds(data.processing_seconds)}</td>
            </tr>
            <tr>
              <th scope="row">FFmpeg run time</th>
              <td>{formatSeconds(data.ffmpeg_run_seconds)}</td>
            </tr>
            <tr>
              <th scope="row">Bytes stored</th>
              <td>
                {formatBytes(data.bytes_stored)} in {data.files_stored} files
              </td>
            </tr>
          </tbody>
        </table>
      )}
    </section>
  )
}
