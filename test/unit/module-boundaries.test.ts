/** DESIGN.md's boundaries, read from the import lines: the programs meet through contracts/ only. */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true })
  return entries.filter((entry) => entry.endsWith('.ts')).map((entry) => join(dir, entry))
}

/** Each file of `dir` that imports from one of `forbidden` (top-level folders), with the import. */
async function crossings(dir: string, forbidden: readonly string[]): Promise<string[]> {
  const found: string[] = []
  for (const file of await sources(dir)) {
    const text = await readFile(file, 'utf8')
    for (const match of text.matchAll(/\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g)) {
      const target = (match[1] ?? match[2]) as string
      if (!target.startsWith('.')) continue
      const resolved = join(file, '..', target)
      if (forbidden.some((folder) => resolved.startsWith(`${folder}/`))) found.push(`${file} → ${target}`)
    }
  }
  return found
}

t.test('api/ imports nothing of the runner or the operator', async (t) => {
  t.same(await crossings('api', ['runner-image', 'operator']), [])
})

t.test('the runner imports nothing of api/ or the operator', async (t) => {
  t.same(await crossings('runner-image', ['api', 'operator']), [])
})

t.test('contracts/ imports none of the programs', async (t) => {
  t.same(await crossings('contracts', ['api', 'operator', 'runner-image']), [])
})

t.test('client/ imports none of the programs: it is the typed client a browser console loads as is', async (t) => {
  t.same(await crossings('client', ['api', 'operator', 'runner-image', 'contracts', 'cli', 'scripts']), [])
})
