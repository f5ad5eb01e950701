#!/usr/bin/env bash
# `npm run -s admin -- <command> …`: the admin CLI (api/admin/cli.ts). Builds
# quietly first, when a source changed since the last build, so stdout carries
# only the command's JSON and a call with a current build answers at once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Everything below runs on the Node the images use, whatever Node launched npm.
source scripts/lib/node-runtime.sh
use_pinned_node "${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
bash scripts/ensure-deps.sh >&2

# Touched when a build starts, so a source saved during that build is newer
# than it and the next call builds again. Even a no-op incremental `tsc` costs
# seconds (it parses the whole program), and it leaves dist/.tsbuildinfo
# untouched when nothing changed, so neither can answer "is dist current?".
stamp=dist/.admin-build-stamp

build_is_current() {
  [[ -f "$stamp" && -f dist/api/admin/cli.js ]] || return 1
  local sources
  # tsconfig.json's own list of what it compiles, so the two cannot drift apart.
  mapfile -t sources < <(node -e 'for (const dir of require("./tsconfig.json").include) console.log(dir)')
  [[ -z "$(find "${sources[@]}" tsconfig.json package-lock.json -newer "$stamp" \( -name '*.ts' -o -name '*.json' \) -print -quit 2>/dev/null)" ]]
}

if ! build_is_current; then
  mkdir -p dist
  touch "$stamp.next"
  # Compile errors elsewhere in the tree still emit JavaScript (exit 2); the
  # CLI's own files are checked by `npm test`. Exit 1 means nothing was emitted.
  status=0
  node_modules/.bin/tsc -p tsconfig.json >/dev/null 2>&1 || status=$?
  if [[ $status -eq 0 || $status -eq 2 ]]; then mv "$stamp.next" "$stamp"; else rm -f "$stamp.next"; fi
fi
if [[ ! -f dist/api/admin/cli.js ]]; then
  echo "ffkube admin: the build failed; run npx tsc -p tsconfig.json to see why" >&2
  exit 1
fi
exec node --enable-source-maps dist/api/admin/cli.js "$@"
