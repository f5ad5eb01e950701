#!/usr/bin/env bash
# `npm start`: provision what local mode needs, build, and run the service.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Everything below runs on the Node the images use, whatever Node launched npm.
source scripts/lib/node-runtime.sh
use_pinned_node "${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
bash scripts/ensure-deps.sh
bash scripts/provision.sh start
npx --no-install tsc -p tsconfig.json
# The web console the API serves at /console/ (cached: rebuilt when its sources change).
bash scripts/build-console.sh
exec node --enable-source-maps dist/api/main.js
