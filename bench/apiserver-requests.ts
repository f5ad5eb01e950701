/**
 * What the kube side does per command, by count (issue 29, item 2): the
 * kube-apiserver's own counters, scraped before and after a burst. Counts
 * survive the host's load where wall time does not. Every client is in them:
 * ffkube's operator, the kubelet, the scheduler, the controllers, the bench.
 *
 * - `apiserver_request_total` by verb and resource (with its subresource,
 *   e.g. `pods/status`), summed over codes and scopes;
 * - `apiserver_watch_events_total` by resource (kind on older servers): the events the server sent to
 *   its watchers, each a serialisation and a send.
 */

/** Counter values by `<verb> <resource>[/<subresource>]` and `watch events <resource>`. */
export type RequestCounts = Map<string, number>

const LINE = /^(apiserver_request_total|apiserver_watch_events_total)\{([^}]*)\} ([0-9.e+]+)$/

function labels(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of text.matchAll(/(\w+)="([^"]*)"/g)) out[m[1]!] = m[2]!
  return out
}

/** The two counters out of the server's Prometheus text, keyed as above. */
export function parseRequestCounts(metrics: string): RequestCounts {
  const counts: RequestCounts = new Map()
  for (const line of metrics.split('\n')) {
    const m = LINE.exec(line)
    if (!m) continue
    const l = labels(m[2]!)
    const key = m[1] === 'apiserver_watch_events_total'
      ? `watch events ${l.resource ?? l.kind ?? '?'}`
      : `${(l.verb ?? '?').toLowerCase()} ${l.resource ?? '?'}${l.subresource ? `/${l.subresource}` : ''}`
    counts.set(key, (counts.get(key) ?? 0) + Number(m[3]))
  }
  return counts
}

/** after − before, per key; keys that did not move are left out. */
export function countsSince(before: RequestCounts, after: RequestCounts): RequestCounts {
  const out: RequestCounts = new Map()
  for (const [key, value] of after) {
    const moved = value - (before.get(key) ?? 0)
    if (moved > 0) out.set(key, moved)
  }
  return out
}

/** Scrapes the API server's /metrics through kubectl (the cluster's admin credentials). */
export async function scrapeRequestCounts(kubectl: (args: string[]) => Promise<string>): Promise<RequestCounts> {
  return parseRequestCounts(await kubectl(['get', '--raw', '/metrics']))
}

/**
 * Prints requests per command, one column per burst, the rows that reach `minimum` per command in
 * some burst (the largest first), then the totals of requests (not watch events) and of watch events.
 */
export function printRequestsPerCommand(bursts: Array<{ label: string; commands: number; counts: RequestCounts }>, minimum = 0.25): void {
  const per = (b: (typeof bursts)[number], key: string) => (b.counts.get(key) ?? 0) / b.commands
  const keys = [...new Set(bursts.flatMap((b) => [...b.counts.keys()]))]
    .filter((key) => bursts.some((b) => per(b, key) >= minimum))
    .sort((x, y) => Math.max(...bursts.map((b) => per(b, y))) - Math.max(...bursts.map((b) => per(b, x))))
  const total = (b: (typeof bursts)[number], watch: boolean) =>
    [...b.counts].filter(([k]) => k.startsWith('watch events ') === watch).reduce((a, [, v]) => a + v, 0) / b.commands
  const rows: string[][] = [
    ...keys.map((key) => [key, ...bursts.map((b) => per(b, key).toFixed(2))]),
    ['all requests', ...bursts.map((b) => total(b, false).toFixed(2))],
    ['all watch events', ...bursts.map((b) => total(b, true).toFixed(2))],
  ]
  const header = ['per command', ...bursts.map((b) => b.label)]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const format = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')
  console.log(format(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
  for (const row of rows) console.log(format(row))
}
