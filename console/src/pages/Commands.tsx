import { useEffect, useState } from 'preact/hooks'
import { api, expectData } from '../api.js'
import { ErrorNotice } from '../components/Notice.js'
import { ProgressBar } from '../components/ProgressBar.js'
import { StatusBadge } from '../components/StatusBadge.js'
import { useLoad } from '../components/useLoad.js'
import { formatSeconds, isTerminal } from '../format.js'
import { href } from '../router.js'

const PAGE = 25
/** While a listed command runs, the list is read again this often; a command's own page follows its event stream. */
const REFRESH_MS = 2_000

/** The account's commands, newest first, with their live status and progress. */
export function Commands() {
  const [offset, setOffset] = useState(0)
  const list = useLoad(async () => expectData(await api.GET('/api/v1/commands', { params: { query: { limit: PAGE, offset } } })).commands, [offset])
  const running = (list.data ?? []).some((command) => !isTerminal(command.status))
  useEffect(() => {
    if (!running) return
    // One list read for every running command on the page: a browser holds only six connections per origin, too few for a stream each.
    const timer = setInterval(() => void list.reload(), REFRESH_MS)
    return () => clearInterval(timer)
  }, [running, list.reload])

  return (
    <section aria-labelledby="commands-title">
      <h1 id="commands-title">Commands</h1>
      <ErrorNotice message={list.error} />
      <table>
        <caption>Commands of this account, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Command</th>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Processing time</th>
          </tr>
        </thead>
        <tbody>
          {(list.data ?? []).map((command) => (
            <tr key={command.command_id}>
              <td>
                <a href={href(`commands/${command.command_id}`)} aria-label={`Command ${command.command_id}`}>
                  <code>{command.command_id}</code>
                </a>
              </td>
              <td>{command.command_type}</td>
              <td>
                <StatusBadge status={command.status} />
                {command.error_status && <span class="hint"> {command.error_status}</span>}
              </td>
              <td>
                <ProgressBar value={command.progress} label={`Progress of ${command.command_id}`} />
              </td>
              <td>{formatSeconds(command.total_processing_seconds)}</td>
            </tr>
          ))}
          {list.data?.length === 0 && (
            <tr>
              <td colSpan={5}>No commands yet.</td>
            </tr>
          )}
        </tbody>
      </table>
      <div class="pager">
        <button type="button" class="secondary" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
          Newer commands
        </button>
        <button type="button" class="secondary" disabled={(list.data?.length ?? 0) < PAGE} onClick={() => setOffset(offset + PAGE)}>
          Older commands
        </button>
      </div>
    </section>
  )
}
