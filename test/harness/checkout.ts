/**
 * Where the checkout is, for tests that read files tsc does not compile
 * (fixtures, scripts, docs) or start one of the checkout's programs. A test
 * module runs from two places: compiled, as `npm test` runs it
 * (dist/test/…/x.test.js), or from its source through tap's TypeScript loader
 * (`npx tap test/x.test.ts`). Paths relative to the module's own file differ
 * between the two, so such tests name paths from the checkout's root instead.
 */
import { join, resolve } from 'node:path'

/** This module's compiled twin is dist/test/harness/checkout.js: one folder deeper than its source. */
const compiled = import.meta.filename.endsWith('.js')

/** The checkout's root folder (where package.json is). */
export const CHECKOUT = resolve(import.meta.dirname, compiled ? '../../..' : '../..')

/** A path inside the checkout, from its root: `checkoutPath('test/unit/ytdlp-stderr')`. */
export function checkoutPath(...parts: string[]): string {
  return join(CHECKOUT, ...parts)
}

/**
 * The argv (after `node`) that runs one of the checkout's TypeScript programs
 * (`operator/main.ts`) the way this test runs: its compiled twin under dist/
 * when the test is compiled, else the source through the loader this process
 * was started with (process.execArgv carries tap's).
 */
export function programArgv(source: string): string[] {
  if (compiled) return ['--enable-source-maps', join(CHECKOUT, 'dist', source.replace(/\.ts$/, '.js'))]
  return [...process.execArgv, join(CHECKOUT, source)]
}
