#!/usr/bin/env bash
# `npm start`: provision what local mode needs, build, and run the service.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Everything below runs on the Node the images use, whatever Node launched npm.
source scripts/lib/node-runtime.sh
use_pinned_node "${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
# Provisioning needs nothing of node_modules or dist/, so the npm install and the
# builds run beside it: on a fresh machine FFmpeg's compile is the long pole, and
# these fill the time its single-threaded steps leave a core idle (issue 30).
bash scripts/provision.sh start &
provisioning=$!
# A failed build must not leave provisioning running on (lanes.sh stops its tree on TERM).
trap 'kill -TERM "$provisioning" 2>/dev/null || true' EXIT
bash scripts/ensure-deps.sh
npx --no-install tsc -p tsconfig.json
# The web console the API serves at /console/ (cached: rebuilt when its sources change).
bash scripts/build-console.sh
wait "$provisioning"
trap - EXIT
exec node --enable-source-maps dist/api/main.js
