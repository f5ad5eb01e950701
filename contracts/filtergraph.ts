/**
 * Reads an ffmpeg filtergraph (`-vf`, `-af`, `-filter_complex` values) the way
 * libavfilter does, so the policy checks the filters ffmpeg will actually
 * build. Two levels of quoting exist and both are modelled:
 *
 * 1. the graph level (`avfilter_graph_parse2` → `av_get_token`): chains are
 *    separated by `;`, filters by `,`, `[label]`s surround a filter, and `'…'`
 *    and `\x` protect those separators;
 * 2. the option level (`process_options` → `av_opt_get_key_value`): a
 *    filter's argument string is split on `:` into `key=value` or positional
 *    values, again with `'…'` and `\x`.
 *
 * Anything libavfilter would read loosely (an unterminated quote, a dangling
 * `[`) is an error here: where the two parsers could disagree, we refuse.
 */

/** A filtergraph the policy refuses to interpret. */
export class FiltergraphSyntaxError extends Error {
  override readonly name = 'FiltergraphSyntaxError'
}

/** One option of a filter: `key=value`, or a positional value (`key` null). */
export interface FilterOption {
  key: string | null
  value: string
}

/** One filter instance in a graph. */
export interface FilterNode {
  /** Filter name without the `@instance` suffix, e.g. `scale`. */
  name: string
  /** The argument string after graph-level unescaping, null when absent. */
  args: string | null
  /** Where the raw (still escaped) argument string sits in the graph text: [start, end); null when absent. */
  argsSpan: [number, number] | null
  options: FilterOption[]
  inputs: string[]
  outputs: string[]
}

const WHITESPACE = ' \n\t\r'
const FILTER_NAME = /^([A-Za-z0-9_]+)(@[A-Za-z0-9_.-]+)?$/
const LABEL = /^[A-Za-z0-9_:.-]+$/
/** `is_key_char` in libavutil/opt.c. */
const KEY_CHAR = /[A-Za-z0-9_\-/.]/

/** A cursor over a string, shared by both levels. */
class Cursor {
  i = 0
  constructor(readonly text: string) {}
  get done(): boolean {
    return this.i >= this.text.length
  }
  peek(): string {
    return this.text[this.i] ?? ''
  }
  skipWhitespace(): void {
    while (!this.done && WHITESPACE.includes(this.peek())) this.i++
  }
}

/**
 * `av_get_token`: reads up to an unquoted, unescaped character of `terms`,
 * removing one level of `'…'` and `\x`, trimming unquoted trailing blanks.
 */
function readToken(cursor: Cursor, terms: string, what: string): string {
  cursor.skipWhitespace()
  let out = ''
  // Index in `out` before which trailing blanks must be kept (they were quoted or escaped).
  let keep = 0
  while (!cursor.done && !terms.includes(cursor.peek())) {
    const c = cursor.text[cursor.i++] as string
    if (c === '\\') {
      if (cursor.done) throw new FiltergraphSyntaxError(`${what}: trailing backslash`)
      out += cursor.text[cursor.i++]
      keep = out.length
    } else if (c === "'") {
      const end = cursor.text.indexOf("'", cursor.i)
      if (end < 0) throw new FiltergraphSyntaxError(`${what}: unterminated quote`)
      out += cursor.text.slice(cursor.i, end)
      cursor.i = end + 1
      keep = out.length
    } else {
      out += c
    }
  }
  let end = out.length
  while (end > keep && WHITESPACE.includes(out[end - 1] as string)) end--
  return out.slice(0, end)
}

/** Reads `[a][b]` link labels. */
function readLabels(cursor: Cursor): string[] {
  const labels: string[] = []
  cursor.skipWhitespace()
  while (cursor.peek() === '[') {
    const end = cursor.text.indexOf(']', cursor.i)
    if (end < 0) throw new FiltergraphSyntaxError(`unterminated label at position ${cursor.i}`)
    const label = cursor.text.slice(cursor.i + 1, end)
    if (!LABEL.test(label)) throw new FiltergraphSyntaxError(`invalid link label [${label}]`)
    labels.push(label)
    cursor.i = end + 1
    cursor.skipWhitespace()
  }
  return labels
}

/**
 * Splits a filter's argument string into options (`process_options`): keys
 * are runs of key characters followed by `=`; anything else is positional.
 */
export function parseFilterOptions(args: string, filter = 'filter'): FilterOption[] {
  const options: FilterOption[] = []
  const cursor = new Cursor(args)
  while (!cursor.done) {
    const start = cursor.i
    let key: string | null = null
    // libavutil's get_key allows blanks around a key: ` textfile = x` is a key.
    cursor.skipWhitespace()
    const keyStart = cursor.i
    while (!cursor.done && KEY_CHAR.test(cursor.peek())) cursor.i++
    const keyEnd = cursor.i
    cursor.skipWhitespace()
    if (keyEnd > keyStart && cursor.peek() === '=') {
      key = args.slice(keyStart, keyEnd)
      cursor.i++
    } else {
      cursor.i = start
    }
    const value = readToken(cursor, ':', `options of ${filter}`)
    options.push({ key, value })
    if (cursor.peek() === ':') {
      cursor.i++
      // A trailing `:` adds nothing in libavfilter; an empty middle value stays.
    }
  }
  return options
}

/** Parses a whole filtergraph into its filters, in order. */
export function parseFiltergraph(graph: string): FilterNode[] {
  const cursor = new Cursor(graph)
  const nodes: FilterNode[] = []
  cursor.skipWhitespace()
  if (graph.startsWith('sws_flags=', cursor.i)) {
    // A graph may begin with scaler flags; they open nothing, so they are skipped.
    const end = graph.indexOf(';', cursor.i)
    if (end < 0) throw new FiltergraphSyntaxError('sws_flags= must be followed by ;')
    cursor.i = end + 1
  }
  for (;;) {
    const inputs = readLabels(cursor)
    const rawName = readToken(cursor, '=,;[', 'filter name')
    const match = FILTER_NAME.exec(rawName)
    if (!match) {
      throw new FiltergraphSyntaxError(rawName === '' ? 'empty filter name' : `invalid filter name "${rawName}"`)
    }
    const name = match[1] as string
    let args: string | null = null
    let argsSpan: [number, number] | null = null
    if (cursor.peek() === '=') {
      cursor.i++
      const start = cursor.i
      args = readToken(cursor, '[],;', `arguments of ${name}`)
      argsSpan = [start, cursor.i]
    }
    const outputs = readLabels(cursor)
    const options = args === null ? [] : parseFilterOptions(args, name)
    nodes.push({ name, args, argsSpan, options, inputs, outputs })
    cursor.skipWhitespace()
    if (cursor.done) return nodes
    const separator = cursor.peek()
    if (separator !== ',' && separator !== ';') {
      throw new FiltergraphSyntaxError(`unexpected "${separator}" after filter ${name}`)
    }
    cursor.i++
  }
}

/** Characters av_get_token stops at or strips, at each level: escaped with a backslash when written back. */
const OPTION_SPECIAL = /[\\':=\s]/g
const GRAPH_SPECIAL = /[\\'[\],;\s]/g

/**
 * Writes a filter's options back as an argument string ffmpeg reads as the
 * same options, escaped for both levels (option, then graph): the inverse of
 * parseFilterOptions then readToken, for text spliced into a graph at `argsSpan`.
 */
export function formatFilterArgs(options: readonly FilterOption[]): string {
  const optionLevel = options
    .map(({ key, value }) => (key === null ? '' : `${key}=`) + value.replace(OPTION_SPECIAL, (c) => `\\${c}`))
    .join(':')
  return optionLevel.replace(GRAPH_SPECIAL, (c) => `\\${c}`)
}
