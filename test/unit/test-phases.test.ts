/**
 * scripts/test-phases.ts, which splits `npm test`'s files into the run that
 * starts while the background lanes still build and the run after them: a table
 * of small import graphs, then the split of this repository's own tests.
 */
import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import t from 'tap'
import { compiledTapArguments, compiledTestFile, filesNeedingBackgroundLanes, relativeImports, testPhases } from '../../scripts/test-phases.js'

t.test('relative imports resolve to the .ts files they load, whatever the form of the import; type-only imports load nothing', async (t) => {
  const source = [
    "import t from 'tap'",
    "import { startKube } from '../harness/kube.js'",
    "import type { TestCluster } from '../harness/cluster.js'",
    "import {\n  a,\n  b,\n} from './multi-line.js'",
    "import './side-effect.js'",
    "export { x } from './re-export.js'",
    "const lazy = await import('../../api/app.js')",
  ].join('\n')
  t.same(relativeImports('test/operator/a.test.ts', source), [
    'test/harness/kube.ts',
    'test/operator/multi-line.ts',
    'test/operator/side-effect.ts',
    'test/operator/re-export.ts',
    'api/app.ts',
  ])
})

const cases: Array<{ name: string; sources: Record<string, string>; late: string[] }> = [
  {
    name: 'a file that imports the kube harness needs the cluster lanes; one that imports only other helpers does not',
    sources: {
      'test/harness/kube.ts': "import { toolPath } from '../../api/local/tools.js'",
      'test/harness/eventually.ts': '',
      'test/operator/a.test.ts': "import { startKube } from '../harness/kube.js'",
      'test/unit/b.test.ts': "import { eventually } from '../harness/eventually.js'",
    },
    late: ['test/harness/kube.ts', 'test/operator/a.test.ts'],
  },
  {
    name: 'the need passes through helpers, however deep',
    sources: {
      'test/harness/image.ts': '',
      'test/chart/objects.ts': "import { builtImages } from '../harness/image.js'",
      'test/chart/setup.ts': "import { objects } from './objects.js'",
      'test/chart/c.test.ts': "import { setup } from './setup.js'",
    },
    late: ['test/harness/image.ts', 'test/chart/objects.ts', 'test/chart/setup.ts', 'test/chart/c.test.ts'],
  },
  {
    name: 'a file that names a background tool itself needs the lanes; one that names a tool of the local parts does not',
    sources: {
      // Spelled in two pieces, so that this file does not name the tool itself.
      'test/smoke/d.test.ts': "const apiserver = toolPath('kube-" + "apiserver')",
      'test/destinations/e.test.ts': "const bucket = await startS3Server(t, 'min" + "io')",
      'test/smoke/f.test.ts': "const ffmpeg = toolPath('ffmpeg')",
    },
    late: ['test/smoke/d.test.ts', 'test/destinations/e.test.ts'],
  },
  {
    name: 'the harness may name a background tool without its users needing it: only a file that asks for it does',
    sources: {
      'test/harness/s3.ts': "const starters = { versitygw: startVersitygw, minio: startMinio }\nexport type S3ServerKind = 'versitygw' | 'min" + "io'",
      'test/e2e/g.test.ts': "import { startS3Server } from '../harness/s3.js'",
    },
    late: [],
  },
  {
    name: 'an import cycle ends, and every file on it needs the lanes when one of them reaches them',
    sources: {
      'test/harness/cluster.ts': '',
      'test/x/h.ts': "import './i.js'\nimport '../harness/cluster.js'",
      'test/x/i.ts': "import './h.js'",
      'test/x/k.test.ts': "import './i.js'",
      'test/x/m.ts': "import './n.js'",
      'test/x/n.ts': "import './m.js'",
      'test/x/o.test.ts': "import './m.js'",
    },
    late: ['test/harness/cluster.ts', 'test/x/h.ts', 'test/x/i.ts', 'test/x/k.test.ts'],
  },
]

for (const { name, sources, late } of cases) {
  t.test(name, async (t) => {
    t.same([...filesNeedingBackgroundLanes(new Map(Object.entries(sources)))].sort(), [...late].sort())
  })
}

t.test('this repository’s tests split into two runs that together hold every test file once, the cluster, operator, chart and MinIO files in the later one', async (t) => {
  const { early, late } = testPhases(process.cwd())
  const all = (await readdir('test', { recursive: true })).filter((file) => file.endsWith('.test.ts')).map((file) => `test/${file}`)
  t.same([...early, ...late].sort(), all.sort(), 'every test file, in exactly one run')
  for (const file of ['test/cluster/lane.test.ts', 'test/cluster/node.test.ts', 'test/operator/watch.test.ts', 'test/chart/images.test.ts', 'test/chart/render.test.ts', 'test/chart/dockerfiles.test.ts', 'test/smoke/kube.test.ts', 'test/smoke/s3.test.ts', 'test/destinations/lifecycle.test.ts']) {
    t.ok(late.includes(file), `${file} waits for the background lanes`)
  }
  for (const file of ['test/unit/test-phases.test.ts', 'test/unit/provision-lanes.test.ts', 'test/e2e/commands.test.ts', 'test/api/openapi-fuzz.test.ts', 'test/docs/quickstart.test.ts']) {
    t.ok(early.includes(file), `${file} runs while they build`)
  }
})

t.test('a test file runs as the file tsc compiles it into, under dist/', async (t) => {
  t.equal(compiledTestFile('test/unit/a.test.ts'), 'dist/test/unit/a.test.js')
  t.equal(compiledTestFile('test/a.test.ts'), 'dist/test/a.test.js')
})

t.test('the test files and folders a user names become compiled files; tap\'s options and other paths stay as given', async (t) => {
  const files = ['test/api/b.test.ts', 'test/unit/a.test.ts', 'test/unit/deeper/c.test.ts', 'test/unitary/d.test.ts']
  const folders = new Set(['test', 'test/unit', 'test/unit/deeper', 'test/api'])
  const compiled = (...args: string[]) => compiledTapArguments(args, files, (path) => folders.has(path))
  t.same(compiled('test/unit/a.test.ts'), ['dist/test/unit/a.test.js'], 'a file')
  t.same(compiled('./test/unit/a.test.ts'), ['dist/test/unit/a.test.js'], 'a file named from ./')
  t.same(compiled('test/unit'), ['dist/test/unit/a.test.js', 'dist/test/unit/deeper/c.test.js'], 'a folder: its files at any depth, not those of a folder whose name starts alike')
  t.same(compiled('./test/unit/deeper/'), ['dist/test/unit/deeper/c.test.js'], 'a folder named with slashes')
  t.same(compiled('test'), files.map(compiledTestFile), 'the whole test folder')
  t.same(compiled('--grep=late', '-R', 'tap', 'test/api/b.test.ts'), ['--grep=late', '-R', 'tap', 'dist/test/api/b.test.js'], 'options around a file')
  t.same(compiled('dist/test/api/b.test.js', 'test/harness/kube.ts'), ['dist/test/api/b.test.js', 'test/harness/kube.ts'], 'a compiled file, and a file that is no test, as given')
})

t.test('every test file of this repository has its compiled file once tsc has run, as npm test runs them', async (t) => {
  const { early, late } = testPhases(process.cwd())
  const missing = [...early, ...late].map(compiledTestFile).filter((file) => !existsSync(file))
  t.same(missing, [], 'tsconfig.json compiles every test file into dist/')
})
