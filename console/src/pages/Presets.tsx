import { useState } from 'preact/hooks'
import type { Preset } from '../../../client/index.js'
import { api, expectData, messageOf } from '../api.js'
import { ErrorNotice } from '../components/Notice.js'
import { useLoad } from '../components/useLoad.js'
import { navigate } from '../router.js'

/** The form that runs a preset: one URL per input alias it declares. */
function ExecutePreset({ preset, onClose }: { preset: Preset; onClose: () => void }) {
  const [urls, setUrls] = useState<Record<string, string>>(() => Object.fromEntries(preset.input_file_keys.map((key) => [key, ''])))
  const [error, setError] = useState<string | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const { command_id } = expectData(await api.POST('/api/v1/presets/{presetId}/execute', { params: { path: { presetId: preset.preset_id } }, body: { input_files: urls } }))
      navigate(`commands/${command_id}`)
    } catch (err) {
      setError(messageOf(err))
    }
  }
  return (
    <form onSubmit={(event) => void submit(event)} class="panel" aria-label={`Run preset ${preset.name}`}>
      <h2>Run {preset.name}</h2>
      {preset.input_file_keys.map((key) => (
        <p key={key}>
          <label for={`input-${key}`}>Input URL for {key}</label>
          <input id={`input-${key}`} type="url" required value={urls[key] ?? ''} onInput={(e) => setUrls({ ...urls, [key]: e.currentTarget.value })} placeholder="https://…" />
        </p>
      ))}
      <ErrorNotice message={error} />
      <button type="submit">Run preset</button>
      <button type="button" class="secondary" onClick={onClose}>
        Close
      </button>
    </form>
  )
}

/** Presets: the system's and the account's; run one with input URLs. */
export function Presets() {
  const presets = useLoad(async () => expectData(await api.GET('/api/v1/presets', { params: { query: { limit: 100 } } })).presets)
  const [running, setRunning] = useState<Preset | null>(null)
  return (
    <section aria-labelledby="presets-title">
      <h1 id="presets-title">Presets</h1>
      <ErrorNotice message={presets.error} />
      {running && <ExecutePreset preset={running} onClose={() => setRunning(null)} />}
      <table>
        <caption>System presets first, then this account's, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Kind</th>
            <th scope="col">Command</th>
            <th scope="col">Inputs → outputs</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(presets.data ?? []).map((preset) => (
            <tr key={preset.preset_id}>
              <td>
                {preset.name}
                {preset.description && <div class="hint">{preset.description}</div>}
              </td>
              <td>{preset.is_system ? 'system' : 'own'}</td>
              <td>
                <code class="command">{preset.ffmpeg_command ?? preset.ffmpeg_commands?.join(' ⟶ ')}</code>
              </td>
              <td>
                {preset.input_file_keys.join(', ')} → {Object.values(preset.output_file_definitions).join(', ')}
              </td>
              <td>
                <button type="button" aria-label={`Run preset ${preset.name}`} onClick={() => setRunning(preset)}>
                  Run
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}
