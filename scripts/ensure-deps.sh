#!/usr/bin/env bash
# Installs the npm dependencies exactly as package-lock.json pins them, once:
# a stamp in node_modules records which lockfile the install came from.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
want="$(sha256sum package-lock.json | cut -c1-64) $(node --version)"
stamp=node_modules/.ffkube-lock-stamp
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then exit 0; fi
echo "ffkube: installing npm dependencies (npm ci)" >&2
npm ci --no-audit --no-fund --loglevel=error
printf '%s' "$want" >"$stamp"
