/**
 * The runner's layout, read from its import lines (main.ts says why): each
 * phase folder stands alone, sharing only what sits beside main.ts, so a
 * phase can be read, and runs in its own container, without the others.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import t from 'tap'

const RUNNER = join('runner-image', 'runner')
const PHASE_FOLDERS = ['fetch', 'run', 'upload']

/** Each import of a file under `folder` that lands in one of `forbidden` (folders of the runner). */
async function importsInto(folder: string, forbidden: readonly string[]): Promise<string[]> {
  const dir = join(RUNNER, folder)
  const found: string[] = []
  for (const entry of await readdir(dir, { recursive: true })) {
    if (!entry.endsWith('.ts')) continue
    const file = join(dir, entry)
    const text = await readFile(file, 'utf8')
    for (const match of text.matchAll(/\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g)) {
      const target = (match[1] ?? match[2]) as string
      if (!target.startsWith('.')) continue
      const landing = relative(RUNNER, join(file, '..', target)).split('/')[0] as string
      if (forbidden.includes(landing)) found.push(`${file} → ${target}`)
    }
  }
  return found
}

t.test('every phase folder exists and holds its phase', async (t) => {
  for (const folder of PHASE_FOLDERS) {
    const files = await readdir(join(RUNNER, folder))
    t.ok(files.includes(`${folder}-phase.ts`), `${folder}/${folder}-phase.ts`)
  }
})

t.test('a phase imports nothing of another phase', async (t) => {
  for (const folder of PHASE_FOLDERS) {
    t.same(await importsInto(folder, PHASE_FOLDERS.filter((other) => other !== folder)), [], folder)
  }
})

t.test('report/ imports no phase', async (t) => {
  t.same(await importsInto('report', PHASE_FOLDERS), [])
})
