import { execFile } from 'node:child_process'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { startApi } from '../harness/api.js'
import { checkoutPath } from '../harness/checkout.js'
import { scratchDir } from '../harness/scratch.js'

/**
 * Schemathesis against the served /openapi.json: every check, a fixed seed so a
 * failure reproduces, and a bounded number of examples per operation so the run
 * stays within a couple of minutes on a loaded 2-core machine. The harness app
 * has real FerretDB and versitygw and no rate limits (a 429 would hide everything
 * after it); commands it accepts are recorded, not run.
 */
const SEED = 20261124

// The run is bounded by examples, not by time: ~30 operations × MAX_EXAMPLES requests and more, each
// a real FerretDB round trip. It takes 2-4 min on a quiet 2-core machine and went past the
// suite's default 300 s under a load of 10-15, so this file gets room for that much work.
t.setTimeout(15 * 60_000)
const MAX_EXAMPLES = Number(process.env.FFKUBE_FUZZ_EXAMPLES ?? 15)

function run(file: string, args: string[], options: { env: NodeJS.ProcessEnv; cwd: string }): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { ...options, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      resolve({ code, output: `${stdout}\n${stderr}` })
    })
  })
}

t.test('the served OpenAPI document holds under Schemathesis with every check on', async (t) => {
  const api = await startApi(t, { allowPrivateNetworks: true })
  const { api_key } = await api.createAccount('business')
  const address = await api.app.listen({ host: '127.0.0.1', port: 0 })
  const scratch = await scratchDir(t, 'ffkube-fuzz-')
  const config = checkoutPath('test', 'api', 'openapi-fuzz', 'schemathesis.toml')
  const { code, output } = await run(
    toolPath('schemathesis'),
    [
      '--config-file', config,
      'run', `${address}/openapi.json`,
      '--url', address,
      '--checks', 'all',
      // Replaced by fuzz_hooks.py's use_after_free_of_removed_resources: see schemathesis.toml.
      '--exclude-checks', 'use_after_free',
      // The console's endpoints take a session cookie the fuzzer has no way to get (its sign-in
      // answers 401 to any generated key): test/console/*.test.ts covers them over HTTP instead.
      '--exclude-path-regex', '^/console/',
      '--seed', String(SEED),
      '--max-examples', String(MAX_EXAMPLES),
      '--generation-database', 'none',
      // Hypothesis health checks on how generation goes, not checks of the server: under
      // this seed the bare string path parameter of webhook redelivery trips filter_too_much,
      // and too_slow measures generation time on the clock, so a loaded CI machine trips it.
      '--suppress-health-check', 'filter_too_much,too_slow',
      '--workers', '1',
      '--no-color',
      '--header', `X-API-KEY: ${api_key}`,
    ],
    {
      // In a scratch folder: Hypothesis keeps its caches in the working directory.
      cwd: scratch,
      env: {
        PATH: process.env.PATH,
        HOME: scratch,
        PYTHONDONTWRITEBYTECODE: '1',
        // Fits generated command strings to the generated maps (a rule across fields), and narrows use_after_free: see the file.
        SCHEMATHESIS_HOOKS: 'fuzz_hooks',
        PYTHONPATH: checkoutPath('test', 'api', 'openapi-fuzz'),
      },
    },
  )
  t.equal(code, 0, 'Schemathesis reports no failures', { diagnostic: true, output })
})
