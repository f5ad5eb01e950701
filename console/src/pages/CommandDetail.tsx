import { useEffect, useState } from 'preact/hooks'
import type { CommandPollResponse, OutputFileMeta } from '../../../client/index.js'
import { api, expectData, messageOf, watchCommand } from '../api.js'
import { ErrorNotice, StatusNotice } from '../components/Notice.js'
import { ProgressBar } from '../components/ProgressBar.js'
import { StatusBadge } from '../components/StatusBadge.js'
import { formatMegabytes, formatSeconds, isTerminal } from '../format.js'
import { href } from '../router.js'

/** Follows the command's event stream until it ends; resumes from the last event id after a dropped connection. */
function useCommand(commandId: string) {
  const [command, setCommand] = useState<CommandPollResponse | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    const abort = new AbortController()
    const follow = async () => {
      let lastEventId: string | undefined
      for (let attempt = 0; !abort.signal.aborted; attempt++) {
        try {
          for await (const event of watchCommand(commandId, abort.signal, lastEventId)) {
            lastEventId = event.id ?? lastEventId
            setCommand(event.command)
            setError(null)
          }
          // Ended after its terminal event, or 204: read the final state once.
          setCommand(expectData(await api.GET('/api/v1/commands/{commandId}', { params: { path: { commandId } } })))
          return
        } catch (err) {
          if (abort.signal.aborted) return
          setError(`${messageOf(err)}; reconnecting`)
          await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** attempt)))
        }
      }
    }
    void follow()
    return () => abort.abort()
  }, [commandId])
  return { command, error, setCommand }
}

/** Every file of a multi-file output (a playlist and its segments, a numbered sequence), each with its own link. */
function OutputMembers({ alias, file }: { alias: string; file: OutputFileMeta }) {
  return (
    <details>
      <summary>
        {file.file_count} files of {alias}
      </summary>
      <ul class="members" aria-label={`Files of ${alias}`}>
        {file.files.map((member) => (
          <li key={member.filename}>
            {member.storage_url ? (
              <a href={member.storage_url} download={member.filename.split('/').pop()} aria-label={`Download ${member.filename} of ${alias}`}>
                {member.filename}
              </a>
            ) : (
              member.filename
            )}{' '}
            <span class="hint">{formatMegabytes(member.size_mbytes)}</span>
          </li>
        ))}
      </ul>
    </details>
  )
}

function OutputRow({ alias, file }: { alias: string; file: OutputFileMeta }) {
  const facts = [file.file_type, file.file_format, file.codec, file.width && file.height ? `${file.width}×${file.height}` : null, file.frame_rate ? `${file.frame_rate} fps` : null, file.duration ? formatSeconds(file.duration) : null]
  return (
    <tr>
      <td>
        <code>{alias}</code>
      </td>
      <td>
        {file.storage_url && !file.is_deleted ? (
          <a href={file.storage_url} download={file.filename} aria-label={`Download ${file.filename}`}>
            {file.filename}
          </a>
        ) : (
          file.filename
        )}
        {file.external_uri && <div class="hint">{file.external_uri}</div>}
        {file.files.length > 1 && <OutputMembers alias={alias} file={file} />}
      </td>
      <td>{facts.filter(Boolean).join(' · ') || '—'}</td>
      <td>{formatMegabytes(file.size_mbytes)}</td>
      <td>{file.is_deleted ? 'deleted' : file.storage_location}</td>
    </tr>
  )
}

/** One command: live status and progress, the original request, outputs, failures, logs, cancel and webhook redelivery. */
export function CommandDetail({ commandId }: { commandId: string }) {
  const { command, error: streamError, setCommand } = useCommand(commandId)
  const [log, setLog] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [status, setStatus] = useState<string | null>(null)
  const terminal = command ? isTerminal(command.status) : false

  const loadLog = async () => {
    try {
      setLog(expectData(await api.GET('/api/v1/commands/{commandId}/logs', { params: { path: { commandId } } })).log)
    } catch (err) {
      setError(messageOf(err))
    }
  }
  useEffect(() => {
    if (terminal) void loadLog()
  }, [terminal, commandId])

  const cancel = async () => {
    setError(null)
    try {
      expectData(await api.POST('/api/v1/commands/{commandId}/cancel', { params: { path: { commandId } } }))
      setStatus('Cancel requested: the command ends FAILED with CANCELLED.')
    } catch (err) {
      setError(messageOf(err))
    }
  }
  const redeliver = async () => {
    setError(null)
    try {
      const { delivery_id } = expectData(await api.POST('/api/v1/commands/{commandId}/webhook/redeliver', { params: { path: { commandId } } }))
      setStatus(`Webhook redelivery queued (${delivery_id}).`)
    } catch (err) {
      setError(messageOf(err))
    }
  }

  return (
    <section aria-labelledby="command-title">
      <p>
        <a href={href('commands')}>All commands</a>
      </p>
      <h1 id="command-title">
        Command <code>{commandId}</code>
      </h1>
      <ErrorNotice message={error ?? streamError} />
      <StatusNotice message={status} />
      {command && (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd aria-label="Command status">
              <StatusBadge status={command.status} />
              {command.processing_stage && <span class="hint"> {command.processing_stage}</span>}
            </dd>
            <dt>Progress</dt>
            <dd>
              <ProgressBar value={command.progress} label="Command progress" />
            </dd>
            <dt>Type</dt>
            <dd>{command.command_type}</dd>
            <dt>Processing time</dt>
            <dd>{formatSeconds(command.total_processing_seconds)}</dd>
            <dt>FFmpeg run time</dt>
            <dd>{formatSeconds(command.ffmpeg_command_run_seconds)}</dd>
            {command.error_status && (
              <>
                <dt>Error</dt>
                <dd class="error-text">
                  {command.error_status}: {command.error_message}
                </dd>
              </>
            )}
          </dl>
          <div class="actions">
            {!terminal && (
              <button type="button" class="danger" onClick={() => void cancel()}>
                Cancel command
              </button>
            )}
            {terminal && (
              <button type="button" class="secondary" onClick={() => void redeliver()}>
                Redeliver webhook
              </button>
            )}
            <button type="button" class="secondary" onClick={() => void loadLog()}>
              Show logs
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() => void api.GET('/api/v1/commands/{commandId}', { params: { path: { commandId } } }).then((result) => result.data && setCommand(result.data))}
            >
              Refresh
            </button>
          </div>
          {command.output_files && (
            <table>
              <caption>Outputs</caption>
              <thead>
                <tr>
                  <th scope="col">Alias</th>
                  <th scope="col">File</th>
                  <th scope="col">Media</th>
                  <th scope="col">Size</th>
                  <th scope="col">Storage</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(command.output_files).map(([alias, file]) => (
                  <OutputRow key={alias} alias={alias} file={file} />
                ))}
              </tbody>
            </table>
          )}
          {command.failed_files && (
            <table>
              <caption>Failed downloads</caption>
              <thead>
                <tr>
                  <th scope="col">Alias</th>
                  <th scope="col">URL</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(command.failed_files).map(([alias, failed]) => (
                  <tr key={alias}>
                    <td>
                      <code>{alias}</code>
                    </td>
                    <td>{failed.url}</td>
                    <td>
                      {failed.error_status}: {failed.error_message}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h2>Original request</h2>
          <pre aria-label="Original request">{JSON.stringify(command.original_request, null, 2)}</pre>
          {command.metadata && (
            <>
              <h2>Metadata</h2>
              <pre aria-label="Metadata">{JSON.stringify(command.metadata, null, 2)}</pre>
            </>
          )}
          {log !== null && (
            <>
              <h2>Logs</h2>
              <pre aria-label="Command logs" class="log">
                {log || '(empty)'}
              </pre>
            </>
          )}
        </>
      )}
    </section>
  )
}
