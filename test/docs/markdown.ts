/**
 * The small part of Markdown the docs tests read: sections by heading,
 * fenced code blocks, links and the anchors GitHub gives headings.
 */

/** A fenced code block: its info string (`sh`, `text`, …) and its text. */
export interface CodeBlock {
  lang: string
  text: string
}

/** The lines of `markdown` outside fenced code blocks, with their 1-based line numbers. */
function proseLines(markdown: string): Array<{ line: string; n: number }> {
  const out: Array<{ line: string; n: number }> = []
  let fenced = false
  markdown.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) fenced = !fenced
    else if (!fenced) out.push({ line, n: i + 1 })
  })
  return out
}

/** The text under the heading whose text is `title`, up to the next heading of the same or a higher level. */
export function section(markdown: string, title: string): string {
  const lines = markdown.split('\n')
  const prose = new Set(proseLines(markdown).map((p) => p.n - 1))
  const start = lines.findIndex((line, i) => prose.has(i) && /^#+ /.test(line) && line.replace(/^#+ /, '') === title)
  if (start < 0) throw new Error(`no heading "${title}"`)
  const level = /^#+/.exec(lines[start]!)![0].length
  let end = lines.length
  for (let i = start + 1; i < lines.length; i++) {
    const m = /^(#+) /.exec(lines[i]!)
    if (prose.has(i) && m && m[1]!.length <= level) {
      end = i
      break
    }
  }
  return lines.slice(start + 1, end).join('\n')
}

/** The fenced code blocks of `markdown`, in order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = []
  let current: { lang: string; lines: string[] } | undefined
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) {
      if (current) {
        blocks.push({ lang: current.lang, text: current.lines.join('\n') })
        current = undefined
      } else current = { lang: line.slice(3).trim(), lines: [] }
    } else current?.lines.push(line)
  }
  return blocks
}

/** The anchor GitHub gives a heading: lowercase, punctuation but `-` and `_` dropped, spaces to `-`. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-')
}

/** Every heading's anchor in `markdown`, with GitHub's `-1`, `-2` suffixes for repeats. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const { line } of proseLines(markdown)) {
    const m = /^#+ (.*)$/.exec(line)
    if (!m) continue
    const base = anchorOf(m[1]!)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    out.add(count === 0 ? base : `${base}-${count}`)
  }
  return out
}

/** The targets of inline links `[text](target)` outside code, with their line numbers. */
export function links(markdown: string): Array<{ target: string; line: number }> {
  const out: Array<{ target: string; line: number }> = []
  for (const { line, n } of proseLines(markdown)) {
    const withoutCode = line.replace(/`[^`]*`/g, '``')
    for (const m of withoutCode.matchAll(/\]\(([^)\s]+)\)/g)) out.push({ target: m[1]!, line: n })
  }
  return out
}
