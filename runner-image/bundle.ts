/**
 * The runner as the image ships it: `dist/runner-image/runner/main.js` and
 * everything it imports (the runner's modules, contracts/, the S3 SDK, nats,
 * pino …) bundled by esbuild into a few files, so a pod's two Node processes
 * read and compile those instead of resolving and loading hundreds of modules
 * each (docs/benchmarks/throughput.md, "The runner bundled"). Run in the
 * image's build stage after tsc (runner-image/Dockerfile):
 *
 *   node dist/runner-image/bundle.js <dist dir> <out dir>
 *
 * writes <out dir>/runner/main.js (the same entry point, argv and behaviour
 * as the compiled one) and <out dir>/runner/chunks/: what main.js loads only
 * when it needs it (the S3 SDK for the upload, the nats client) stays a file
 * of its own, so the ffmpeg container never compiles the storage SDK.
 * Local mode keeps running the compiled modules; test/runner/runner-bundle.test.ts
 * runs a command through the bundle.
 */
import { build, type BuildOptions } from 'esbuild'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * Some dependencies are CommonJS and call require() for Node's own modules;
 * an ES module has no require, so each output file makes its own.
 */
const REQUIRE_IN_ESM = "import { createRequire as __ffkubeCreateRequire } from 'node:module'; const require = __ffkubeCreateRequire(import.meta.url);"

/** esbuild's options for the runner: exported so the test bundles exactly as the image does. */
export function runnerBundleOptions(distDir: string, outDir: string): BuildOptions {
  return {
    entryPoints: { main: join(distDir, 'runner-image', 'runner', 'main.js') },
    outdir: join(outDir, 'runner'),
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // The SDK's ES module builds, which esbuild can tree-shake (its CommonJS ones it cannot).
    mainFields: ['module', 'main'],
    banner: { js: REQUIRE_IN_ESM },
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
  }
}

/** Bundles the compiled runner under `distDir` into `outDir`; returns the files written and their bytes. */
export async function bundleRunner(distDir: string, outDir: string): Promise<Record<string, number>> {
  const result = await build(runnerBundleOptions(distDir, outDir))
  return Object.fromEntries(Object.entries(result.metafile!.outputs).map(([file, { bytes }]) => [file, bytes]))
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [distDir, outDir] = process.argv.slice(2)
  if (!distDir || !outDir) {
    process.stderr.write('usage: node dist/runner-image/bundle.js <dist dir> <out dir>\n')
    process.exit(2)
  }
  for (const [file, bytes] of Object.entries(await bundleRunner(distDir, outDir))) process.stdout.write(`${file} ${bytes} bytes\n`)
}
