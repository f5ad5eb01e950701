#!/usr/bin/env bash
# `npm run -s bench -- <name> [args…]`: runs bench/<name>.ts on the Node the
# images use (as `npm start` and `npm test` do), after provisioning what the
# tests provision (the benches share their harness: a no-op once `npm test`
# has run) and building. Without a name, lists the benches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# A bench is a file of bench/ that exports nothing; the others are what they share.
is_bench() { [[ "$1" =~ ^[a-z0-9-]+$ && -f "bench/$1.ts" ]] && ! grep -q '^export ' "bench/$1.ts"; }
if [[ $# -eq 0 ]] || ! is_bench "$1"; then
  [[ $# -gt 0 ]] && printf 'ffkube bench: no bench named %s\n' "$1" >&2
  printf 'usage: npm run -s bench -- <name> [args...]; names:\n' >&2
  grep -L '^export ' bench/*.ts | sed -E 's|bench/(.*)\.ts|  \1|' >&2
  exit 2
fi
name="$1"
shift
source scripts/lib/node-runtime.sh
use_pinned_node "${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
bash scripts/ensure-deps.sh >&2
bash scripts/provision.sh test
npx --no-install tsc -p tsconfig.json >&2
exec node --enable-source-maps "dist/bench/${name}.js" "$@"
