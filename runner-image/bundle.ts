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
import { build, type BuildOptions, type Plugin } from 'esbuild'
import { isBuiltin } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * Some dependencies are CommonJS and call require() for Node's own modules;
 * an ES module has no require, so each output file makes its own.
 */
const REQUIRE_IN_ESM = "import { createRequire as __ffkubeCreateRequire } from 'node:module'; const require = __ffkubeCreateRequire(import.meta.url);"

/**
 * Node's modules are required, never imported: an ES module's import of a
 * builtin builds its ES facade, which reads every export, and node:http's
 * include lazy getters (WebSocket, MessageEvent …) that load Node's whole
 * bundled undici, in both of a pod's containers; require() reads no getter.
 * bench/runner-pod-cpu: ~8 ms of CPU per container (docs/benchmarks/throughput.md).
 */
const NAMESPACE = 'ffkube-builtin-required'
export const requireBuiltins: Plugin = {
  name: 'require-builtins',
  setup(build) {
    build.onResolve({ filter: /^[a-z:_/0-9]+$/ }, (args) => {
      if (!isBuiltin(args.path)) return undefined
      // The require() inside the stand-in is Node's own (the banner's createRequire).
      if (args.namespace === NAMESPACE) return { path: args.path, external: true }
      return { path: args.path.startsWith('node:') ? args.path : `node:${args.path}`, namespace: NAMESPACE }
    })
    build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)})`, loader: 'js' }))
  },
}

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
    plugins: [requireBuiltins],
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
