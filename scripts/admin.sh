#!/usr/bin/env bash
# `npm run -s admin -- <command> …`: the admin CLI (api/admin/cli.ts). Builds
# quietly first so stdout carries only the command's JSON.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/ensure-deps.sh >&2
# Compile errors elsewhere in the tree still emit JavaScript; the CLI's own
# files are checked by `npm test`, so only a missing build stops it here.
npx --no-install tsc -p tsconfig.json >/dev/null 2>&1 || true
if [[ ! -f dist/api/admin/cli.js ]]; then
  echo "ffkube admin: the build failed; run npx tsc -p tsconfig.json to see why" >&2
  exit 1
fi
exec node --enable-source-maps dist/api/admin/cli.js "$@"
