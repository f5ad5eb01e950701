/**
 * The chart's Grafana dashboard (charts/ffkube/dashboards/ffkube.json): its
 * ConfigMap renders only when asked, and every query names a metric the real
 * processes export — the service as `npm start` runs it, driven through
 * commands, a cancel and a webhook, and the operator on a kube-apiserver.
 */
import t from 'tap'
import { createServer } from 'node:http'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { serveMetrics } from '../../operator/metrics.js'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'
import { eventually } from '../harness/eventually.js'
import { CHART_DIR, startHelm } from '../harness/helm.js'
import { startKube } from '../harness/kube.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'
import { commandSpec } from '../operator/fixtures.js'
import { installCrd, newNamespace, settings, startOperator } from '../operator/kube-setup.js'
import { NodeAgent } from '../operator/node-agent.js'
import { metricNames, notExported, parseScrape, type Scrape } from './promql.js'

interface Panel {
  title: string
  type: string
  datasource: { type: string; uid: string }
  targets: Array<{ expr: string; refId: string }>
}
interface Dashboard {
  uid: string
  title: string
  panels: Panel[]
  templating: { list: Array<{ name: string; type: string; query: string }> }
}

const DASHBOARD_FILE = join(CHART_DIR, 'dashboards', 'ffkube.json')
const dashboardText = await readFile(DASHBOARD_FILE, 'utf8')
const dashboard = JSON.parse(dashboardText) as Dashboard
const queries = dashboard.panels.flatMap((p) => p.targets.map((target) => ({ panel: p.title, expr: target.expr })))

t.test('reads the metric names of PromQL expressions, leaving out functions, labels, durations and keywords', async (t) => {
  const cases: Array<[string, string[]]> = [
    ['max by (plan) (ffkube_dispatch_queue_depth)', ['ffkube_dispatch_queue_depth']],
    ['histogram_quantile(0.95, sum by (le, route) (rate(x_bucket{route=~"/api/.*", a!="b"}[$__rate_interval])))', ['x_bucket']],
    ['sum(rate(a_sum[5m])) / sum(rate(a_count[5m]))', ['a_sum', 'a_count']],
    ['sum(rate(c_total{outcome="failure"}[1m])) * 60 > bool 1e3', ['c_total']],
    ['a and on(instance) b offset 5m unless ignoring (job) c', ['a', 'b', 'c']],
    ['sum without (pod) (d) + max(d)', ['d']],
  ]
  for (const [expr, names] of cases) t.same(metricNames(expr), names, expr)
})

t.test('tells an exported sample from a histogram family used bare and from a name nobody exports', async (t) => {
  const scrape = parseScrape([
    '# TYPE h histogram', 'h_bucket{le="1"} 0', 'h_bucket{le="+Inf"} 0', 'h_sum 0', 'h_count 0',
    '# TYPE c counter', 'c{x="1"} 3', '# TYPE g gauge',
  ].join('\n'))
  t.equal(notExported('h_bucket', [scrape]), null)
  t.equal(notExported('h_count', [scrape]), null)
  t.equal(notExported('c', [scrape]), null)
  t.match(notExported('h', [scrape]), /a histogram family has no samples of that name/)
  t.match(notExported('g', [scrape]), /declared but no sample scraped/)
  t.match(notExported('nope_total', [scrape]), /no process exports it/)
  t.match(notExported('c_bucket', [scrape]), /no such sample and no family c_bucket|no process exports it/)
})

t.test('the dashboard has the panels the operators asked for, each on the chosen Prometheus data source', async (t) => {
  t.equal(dashboard.uid, 'ffkube')
  t.has(dashboard.templating.list, [{ name: 'datasource', type: 'datasource', query: 'prometheus' }])
  for (const panel of dashboard.panels) {
    t.same(panel.datasource, { type: 'prometheus', uid: '${datasource}' }, `${panel.title}: the data source variable`)
    t.ok(panel.targets.length > 0, `${panel.title}: has queries`)
  }
  const titles = dashboard.panels.map((p) => p.title).join('\n')
  for (const wanted of [/queue depth/i, /waiting time/i, /commands per minute, by status/i, /command duration by type/i, /webhook attempts/i, /webhook failure/i, /runner pods/i]) {
    t.match(titles, wanted)
  }
})

t.test('the ConfigMap is rendered only when metrics.grafanaDashboard.enabled, labelled for the Grafana sidecar', async (t) => {
  const helm = await startHelm(t)
  const configMaps = (objects: KubernetesObject[]) => objects.filter((o): o is V1ConfigMap => o.kind === 'ConfigMap' && o.metadata!.name!.endsWith('grafana-dashboard'))
  t.same(configMaps(await helm.template()), [], 'off by default')
  const [configMap, ...others] = configMaps(await helm.template({ setJson: { 'metrics.grafanaDashboard.enabled': 'true', 'metrics.grafanaDashboard.annotations': '{"grafana_folder":"Media"}' } }))
  t.same(others, [])
  t.equal(configMap?.metadata?.name, 'ffkube-grafana-dashboard')
  t.equal(configMap?.metadata?.namespace, 'ffkube')
  t.equal(configMap?.metadata?.labels?.grafana_dashboard, '1', 'the label the sidecar looks for')
  t.equal(configMap?.metadata?.annotations?.grafana_folder, 'Media')
  t.same(JSON.parse(configMap?.data?.['ffkube.json'] ?? 'null'), dashboard, 'the dashboard file, whole')
  const [elsewhere] = configMaps(await helm.template({ setJson: { 'metrics.grafanaDashboard.enabled': 'true', 'metrics.grafanaDashboard.namespace': '"monitoring"' } }))
  t.equal(elsewhere?.metadata?.namespace, 'monitoring', 'or in the namespace the sidecar watches')
})

/** Scrapes of the service with every dashboard family holding samples: commands ended, one cancelled, one waiting, a webhook sent. */
async function serviceScrapes(t: Teardown): Promise<Scrape[]> {
  const dir = await scratchDir(t)
  // One command at a time for the account, so a second one waits and the queue depth has a series.
  const environment = await serviceEnvironment(t, { CONCURRENT_COMMANDS_BUSINESS: '1' })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  let hooks = 0
  const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end(void hooks++)))
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => receiver.close(resolve)))
  const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`
  const put = await api.request('PUT', '/webhook-config', { url: hookUrl })
  if (put.status !== 200) throw new Error(`PUT /webhook-config answered ${put.status}`)

  const scrape = async () => parseScrape(await (await fetch(`${service.baseUrl}/metrics`)).text())
  const input = { in_video: media.url(clip) }
  const quick = { input_files: input, output_files: { out_small: 'small.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_small}}' }
  const first = await api.waitForCommand((await api.post('/run-ffmpeg-command', quick)).command_id)
  if (first.status !== 'SUCCESS') throw new Error(`the first command ended ${JSON.stringify(first)}`)
  await eventually('the webhook of the first command', () => hooks > 0)

  // A command that never ends by itself holds the account's one slot ...
  const endless = await api.post('/run-ffmpeg-command', {
    input_files: input, output_files: { out_loop: 'loop.mp4' }, ffmpeg_command: 'ffmpeg -stream_loop -1 -i {{in_video}} -c copy {{out_loop}}', max_command_run_seconds: 300,
  })
  await eventually('the endless command to run', async () => (await api.request('GET', `/commands/${endless.command_id}`)).body.status === 'PROCESSING')
  // ... so this one waits for its hand-off while the service is scraped.
  const waiting = await api.post('/run-ffmpeg-command', quick)
  const whileWaiting = await scrape()
  const cancel = await api.request('POST', `/commands/${endless.command_id}/cancel`)
  if (cancel.status !== 200) throw new Error(`cancel answered ${cancel.status}`)
  const second = await api.waitForCommand(waiting.command_id)
  if (second.status !== 'SUCCESS') throw new Error(`the waiting command ended ${JSON.stringify(second)}`)
  const stopped = await eventually('the cancel counted', async () => {
    const now = await scrape()
    return now.samples.has('ffkube_commands_stopped_total') && now.samples.has('ffkube_webhook_attempts_total') ? now : undefined
  })
  return [whileWaiting, stopped]
}

/** A scrape of the operator's /metrics after one command's runner pod ran. */
async function operatorScrape(t: Teardown): Promise<Scrape> {
  const kube = await startKube(t)
  const kc = kube.kubeConfig()
  await installCrd(kc)
  const ns = await newNamespace(kc, 'dashboard')
  const agent = new NodeAgent(kc, ns, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, kc, settings(ns))
  const server = await serveMetrics(operator.metrics, 0, '127.0.0.1')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  await eventually('leadership', () => operator.isLeader)
  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await eventually('the runner pod to succeed', () => operator.pods.list().some((p) => p.status?.phase === 'Succeeded'))
  return parseScrape(await (await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`)).text())
}

t.test('every query of the dashboard names a metric the service or the operator exports', async (t) => {
  const scrapes = [...(await serviceScrapes(t)), await operatorScrape(t)]
  const problems = queries.flatMap(({ panel, expr }) => {
    const names = metricNames(expr)
    if (names.length === 0) return [`${panel}: ${expr} names no metric`]
    return names.map((name) => notExported(name, scrapes)).filter((p): p is string => p !== null).map((p) => `${panel}: ${p}`)
  })
  t.same(problems, [], 'queries naming no exported metric')
  t.ok(queries.length >= 10, `${queries.length} queries checked`)
})
