/**
 * What open event streams cost an API replica: N streams, each on its own
 * QUEUED command (nothing runs: the streams stay open), for a few seconds;
 * prints the MongoDB reads per second and this process's CPU (the API and
 * the streams' clients). `poll` runs the API without NATS (a read per
 * watched command every 250 ms), `nudge` with it (the projector's nudges,
 * none here, and a fallback read every second).
 *
 *   npm run -s bench -- event-streams [streams=100] [seconds=5] [poll|nudge]
 */
import { openEventStream } from '../test/harness/sse.js'
import { connect } from 'nats'
import { startApi } from '../test/harness/api.js'
import { startNats } from '../test/harness/nats.js'

const streams = Number(process.argv[2] ?? 100)
const seconds = Number(process.argv[3] ?? 5)
const mode = process.argv[4] === 'nudge' ? 'nudge' : 'poll'
const teardowns: (() => unknown)[] = []
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) }

let nats
if (mode === 'nudge') {
  const server = await startNats(t)
  nats = await connect({ servers: server.url })
  const connection = nats
  t.teardown(() => connection.close())
}
const api = await startApi(t, nats ? { nats } : {}, { monitorCommands: true })
const { api_key } = await api.createAccount('business')
const address = await api.app.listen({ port: 0, host: '127.0.0.1' })
const ids: string[] = []
for (let i = 0; i < streams; i++) {
  const res = await api.app.inject({
    method: 'POST', url: '/api/v1/run-ffmpeg-command', headers: { 'x-api-key': api_key },
    payload: { input_files: { in_v: 'https://example.com/a.mp4' }, output_files: { out_v: 'o.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}' },
  })
  ids.push(res.json().command_id)
}
const open = await Promise.all(ids.map((id) => openEventStream(`${address}/api/v1/commands/${id}/events`, { 'x-api-key': api_key })))
await Promise.all(open.map((s) => s.next()))
let finds = 0
api.client.on('commandStarted', (event) => {
  if (event.commandName === 'find') finds++
})
const cpu = process.cpuUsage()
const started = performance.now()
await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
const elapsed = (performance.now() - started) / 1000
const used = process.cpuUsage(cpu)
console.log(JSON.stringify({ mode, streams, seconds: Math.round(elapsed * 10) / 10, finds_per_second: Math.round(finds / elapsed), cpu_percent_of_one_core: Math.round(((used.user + used.system) / 1e6 / elapsed) * 100) }))
for (const s of open) s.abort()
for (const fn of teardowns.reverse()) await fn()
process.exit(0)
