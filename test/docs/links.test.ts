/**
 * The documentation holds together: every relative link in README.md and
 * docs/ names a file (and heading) that exists, and every page under docs/
 * can be reached from the README by following links.
 */
import t from 'tap'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { CHECKOUT } from '../harness/checkout.js'
import { anchors, links } from './markdown.js'

/** The Markdown files under `dir`, relative to the repository root. */
function markdownUnder(dir: string): string[] {
  return readdirSync(join(CHECKOUT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(dir, name))
    .sort()
}

/** A link's target as a repository path and an anchor; null for one that leaves the repository or is a URL. */
function resolveLink(from: string, target: string): { path: string; anchor: string } | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null
  const [pathPart, anchor = ''] = target.split('#', 2) as [string, string?]
  const path = pathPart === '' ? from : normalize(join(dirname(from), decodeURIComponent(pathPart)))
  if (path.startsWith('..')) return null // ../shared: the spec and design beside the repository
  return { path, anchor }
}

/** Broken links of `files` (repository paths), as `file:line → target (why)`. */
function brokenLinks(files: string[], read: (path: string) => string | undefined): string[] {
  const problems: string[] = []
  for (const file of files) {
    for (const { target, line } of links(read(file) ?? '')) {
      const to = resolveLink(file, target)
      if (!to) continue
      const text = read(to.path)
      if (text === undefined) problems.push(`${file}:${line} → ${target} (no such file)`)
      else if (to.anchor && to.path.endsWith('.md') && !anchors(text).has(to.anchor)) {
        problems.push(`${file}:${line} → ${target} (no heading with that anchor)`)
      }
    }
  }
  return problems
}

/** The Markdown files reachable from `start` by relative links. */
function reachable(start: string, read: (path: string) => string | undefined): Set<string> {
  const seen = new Set<string>([start])
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift()!
    for (const { target } of links(read(file) ?? '')) {
      const to = resolveLink(file, target)
      if (to && to.path.endsWith('.md') && !seen.has(to.path) && read(to.path) !== undefined) {
        seen.add(to.path)
        queue.push(to.path)
      }
    }
  }
  return seen
}

/** Reads a repository file or folder: a folder reads as '' so links to folders resolve. */
function readRepo(path: string): string | undefined {
  const full = join(CHECKOUT, path)
  if (!existsSync(full)) return undefined
  return statSync(full).isDirectory() ? '' : readFileSync(full, 'utf8')
}

const pages = ['README.md', ...markdownUnder('docs'), 'charts/ffkube/README.md']

t.test('every relative link in the README and docs/ names an existing file and heading', async (t) => {
  t.same(brokenLinks(pages, readRepo), [])
})

t.test('every page under docs/ is reachable from the README', async (t) => {
  const seen = reachable('README.md', readRepo)
  t.same(
    markdownUnder('docs').filter((page) => !seen.has(page)),
    [],
    'pages no link leads to',
  )
  t.ok(seen.has('charts/ffkube/README.md'), "the chart's README is linked")
})

t.test('the link checker reports a missing file, a missing heading and an unreachable page', async (t) => {
  const files: Record<string, string> = {
    'README.md': '# Top\n\n[a](docs/a.md) [gone](docs/gone.md) [bad anchor](docs/a.md#nowhere) [ok anchor](docs/a.md#a-heading)\n',
    'docs/a.md': '# A heading\n\n```sh\n# not a heading\n```\n[up](../README.md#top) [spec](../../shared/spec.md) [web](https://example.com/x)\n',
    'docs/orphan.md': '# Orphan\n',
  }
  const read = (path: string): string | undefined => files[path]
  t.same(brokenLinks(Object.keys(files), read), [
    'README.md:3 → docs/gone.md (no such file)',
    'README.md:3 → docs/a.md#nowhere (no heading with that anchor)',
  ])
  t.same([...reachable('README.md', read)].sort(), ['README.md', 'docs/a.md'])
})
