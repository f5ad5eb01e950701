#!/usr/bin/env bash
# `npm test`: provision every real server the tests use, type-check and build,
# lint, then run every test with tap. Extra arguments go to tap (e.g. a file).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/ensure-deps.sh
bash scripts/provision.sh test
echo "ffkube: type-check and build (tsc)" >&2
npx --no-install tsc -p tsconfig.json
echo "ffkube: lint (eslint)" >&2
npx --no-install eslint --max-warnings 0 .
echo "ffkube: tests (tap)" >&2
exec npx --no-install tap "$@"
