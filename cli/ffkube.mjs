#!/usr/bin/env node
// The `ffkube` bin of package.json: a launcher kept in git with its executable bit, so that
// `npx ffkube` works in a fresh clone (tsc writes dist/cli/main.js without one). The CLI is cli/*.ts.
import { existsSync } from 'node:fs'
import process from 'node:process'
import { URL } from 'node:url'

const main = new URL('../dist/cli/main.js', import.meta.url)
if (!existsSync(main)) {
  process.stderr.write('ffkube: the CLI is not built yet: run `npx tsc -p tsconfig.json` (or `npm start` / `npm test`) in the checkout\n')
  process.exit(2)
}
await import(main.href)
