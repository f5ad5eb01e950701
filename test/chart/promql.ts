/**
 * Just enough PromQL reading for the dashboard test: the metric names an
 * expression selects, and the sample names and types of a /metrics scrape.
 */

/** Words that are PromQL operators or modifiers, never metric names. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan'])

/**
 * The metric names `expr` selects, in order of first use: identifiers that are
 * not functions (followed by `(`), keywords, label names (inside `{…}` or a
 * grouping's `(…)`), durations (inside `[…]`, Grafana's `$__rate_interval`
 * included) or parts of numbers.
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
  const names: string[] = []
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = m[0]
    const before = stripped[m.index - 1] ?? ' '
    const after = stripped.slice(m.index + word.length).trimStart()
    if (/[0-9.$]/.test(before) || after.startsWith('(') || KEYWORDS.has(word.toLowerCase())) continue
    if (!names.includes(word)) names.push(word)
  }
  return names
}

/** A scrape in the Prometheus text format: the names its samples carry, and each family's TYPE. */
export interface Scrape {
  samples: Set<string>
  types: Map<string, string>
}

export function parseScrape(text: string): Scrape {
  const samples = new Set<string>()
  const types = new Map<string, string>()
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line)
    if (type) types.set(type[1]!, type[2]!)
    else if (line && !line.startsWith('#')) samples.add(/^[^{\s]+/.exec(line)![0])
  }
  return { samples, types }
}

/**
 * Why `name` is not something the scrapes export, or null when it is: a
 * sample of that name was scraped, and a `_bucket`, `_sum` or `_count` name
 * belongs to a family of type histogram (or summary, for `_sum`/`_count`).
 */
export function notExported(name: string, scrapes: Scrape[]): string | null {
  const scraped = scrapes.some((s) => s.samples.has(name))
  const suffix = /_(bucket|sum|count)$/.exec(name)
  if (suffix) {
    const family = name.slice(0, -suffix[0].length)
    const type = scrapes.map((s) => s.types.get(family)).find(Boolean)
    const allowed = suffix[1] === 'bucket' ? ['histogram'] : ['histogram', 'summary']
    if (type && allowed.includes(type)) return scraped ? null : `${name}: family ${family} is a ${type} but no ${name} sample was scraped`
    if (type === undefined && !scraped) return `${name}: no such sample and no family ${family}`
  }
  if (scraped) return null
  const type = scrapes.map((s) => s.types.get(name)).find(Boolean)
  if (type === 'histogram' || type === 'summary') return `${name}: a ${type} family has no samples of that name; use ${name}_bucket, _sum or _count`
  return type ? `${name}: a ${type} family declared but no sample scraped` : `${name}: no process exports it`
}
