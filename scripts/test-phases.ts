// Splits the test files into `npm test`'s two tap runs (scripts/test.sh): the
// files that need what only scripts/provision.sh's background lanes build
// (MinIO, helm and the chart's tools; kube: etcd, kube-apiserver and the single
// node; the node and service images), and the others, which run while those
// lanes still build. A file needs them when its relative imports reach one of
// the harness modules that start those parts, or when it names one of their
// tools itself. Derived from the sources, so a new test file lands in the
// right run without a list to keep; should one land early anyway, the harness
// waits for its lane (test/harness/background-lanes.ts).
//
// tap runs each file as tsc compiled it (dist/test/…/x.test.js, its source map
// beside it): no TypeScript compiler loads in each test's Node. So both lists,
// and the files a user names, come out as those compiled twins.
//
//   node dist/scripts/test-phases.js early|late      # that run's compiled test files, one a line
//   node dist/scripts/test-phases.js compiled ARG…   # tap's arguments, test files and folders compiled
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, posix, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The harness modules that start what the background lanes build (repository-relative). */
export const BACKGROUND_HARNESS = [
  'test/harness/kube.ts', // etcd and kube-apiserver
  'test/harness/cluster.ts', // the single node: kubelet, containerd, CoreDNS, kube-router …
  'test/harness/cluster/images.ts', // the pause, CoreDNS and busybox archives
  'test/harness/image.ts', // dist/images.json: the service and runner images
  'test/harness/helm.ts', // helm
]

/**
 * Tools of the background lanes, as a test names them: `toolPath('kubectl')`,
 * `startS3Server(t, 'minio')`, `join(bin, 'dockerfile-lint')`. Looked for
 * outside test/harness/ only: the harness offers MinIO beside versitygw
 * (test/harness/s3.ts), and a file that uses versitygw alone needs no MinIO.
 */
const BACKGROUND_TOOLS = [
  'etcd', 'kube-apiserver', 'kubelet', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy', 'kubectl', 'containerd', 'ctr', 'coredns', 'kube-router',
  'minio', 'helm', 'helm-docs', 'dockerfile-lint',
]
const NAMES_A_BACKGROUND_TOOL = new RegExp(`['"](?:${BACKGROUND_TOOLS.join('|')})['"]`)

/**
 * Relative module specifiers of `import … from`, `export … from`, `import '…'`
 * (group 2; group 1 is `type ` when the statement only imports types) and of
 * `import('…')` (group 3).
 */
const RELATIVE_IMPORT = /^\s*(?:import|export)\s+(type\s+)?(?:[^'"]*?\bfrom\s*)?['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/gm

/** The repository-relative .ts files a source loads by relative path (`import type` loads nothing). */
export function relativeImports(file: string, source: string): string[] {
  const found: string[] = []
  for (const match of source.matchAll(RELATIVE_IMPORT)) {
    const specifier = match[1] ? undefined : (match[2] ?? match[3])
    if (specifier) found.push(posix.join(posix.dirname(file), specifier).replace(/\.js$/, '.ts'))
  }
  return found
}

/**
 * The files of `sources` (repository-relative path → text) that reach a
 * background harness module through relative imports, or name a background tool.
 */
export function filesNeedingBackgroundLanes(sources: ReadonlyMap<string, string>): Set<string> {
  // From the files that start those parts themselves, out along "is imported by".
  const importers = new Map<string, string[]>()
  const needing: string[] = []
  for (const [file, source] of sources) {
    for (const imported of relativeImports(file, source)) importers.set(imported, [...(importers.get(imported) ?? []), file])
    if (BACKGROUND_HARNESS.includes(file) || (!file.startsWith('test/harness/') && NAMES_A_BACKGROUND_TOOL.test(source))) needing.push(file)
  }
  const found = new Set(needing)
  for (let file = needing.pop(); file !== undefined; file = needing.pop()) {
    for (const importer of importers.get(file) ?? []) {
      if (found.has(importer)) continue // each file once, so an import cycle ends
      found.add(importer)
      needing.push(importer)
    }
  }
  return found
}

/** Every .ts file under `dir`, repository-relative, with its text. */
function readSources(root: string, dir: string): Map<string, string> {
  const sources = new Map<string, string>()
  for (const entry of readdirSync(join(root, dir), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue
    const path = join(entry.parentPath, entry.name)
    sources.set(relative(root, path).split('\\').join('/'), readFileSync(path, 'utf8'))
  }
  return sources
}

/** The checkout's test files (every .test.ts under test/, tap's include), in tap's two runs, each sorted. */
export function testPhases(root: string): { early: string[]; late: string[] } {
  const sources = readSources(root, 'test')
  const late = filesNeedingBackgroundLanes(sources)
  const files = [...sources.keys()].filter((file) => file.endsWith('.test.ts')).sort()
  return { early: files.filter((file) => !late.has(file)), late: files.filter((file) => late.has(file)) }
}

/** The file tsc compiles a test file into (`test/a/b.test.ts` → `dist/test/a/b.test.js`). */
export function compiledTestFile(file: string): string {
  return `dist/${file.replace(/\.ts$/, '.js')}`
}

/**
 * tap's arguments with each test file or folder of the checkout named as
 * `npm test -- …` users name them, from the checkout's root (`test/x.test.ts`,
 * `./test/unit/`), replaced by the compiled test files; anything else (tap's
 * options, a `.js` file) as given. `isFolder` tells a folder from a file.
 */
export function compiledTapArguments(args: readonly string[], testFiles: readonly string[], isFolder: (path: string) => boolean): string[] {
  return args.flatMap((arg) => {
    const path = posix.normalize(arg).replace(/\/$/, '')
    if (path.startsWith('test/') && path.endsWith('.test.ts')) return [compiledTestFile(path)]
    if ((path === 'test' || path.startsWith('test/')) && isFolder(path)) return testFiles.filter((file) => file.startsWith(`${path}/`)).map(compiledTestFile)
    return [arg]
  })
}

const invokedAsScript = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)
if (invokedAsScript) {
  const [command, ...args] = process.argv.slice(2)
  // Run from dist/scripts/: the checkout is two levels up.
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
  const phases = testPhases(root)
  let listed: string[]
  if (command === 'early' || command === 'late') listed = phases[command].map(compiledTestFile)
  else if (command === 'compiled') {
    const isFolder = (path: string) => statSync(join(root, path), { throwIfNoEntry: false })?.isDirectory() === true
    // A path inside the checkout may also be named whole.
    const fromRoot = args.map((arg) => (isAbsolute(arg) && !relative(root, arg).startsWith('..') ? relative(root, arg) : arg))
    listed = compiledTapArguments(fromRoot, [...phases.early, ...phases.late].sort(), isFolder)
  } else {
    process.stderr.write('usage: node dist/scripts/test-phases.js early|late|compiled [ARG…]\n')
    process.exit(2)
  }
  process.stdout.write(listed.map((line) => `${line}\n`).join(''))
}
