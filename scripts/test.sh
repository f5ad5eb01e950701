#!/usr/bin/env bash
# `npm test`: provision every real server the tests use, type-check and build,
# lint, then run every test with tap. Extra arguments go to tap (e.g. a file).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Everything below runs on the Node the images use, whatever Node launched npm.
source scripts/lib/node-runtime.sh
use_pinned_node "${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
bash scripts/ensure-deps.sh
bash scripts/provision.sh test
echo "ffkube: type-check and build (tsc)" >&2
npx --no-install tsc -p tsconfig.json
# The web console (dist/console), which test/console/browser.test.ts drives in Chromium.
bash scripts/build-console.sh
echo "ffkube: lint (eslint)" >&2
npx --no-install eslint --max-warnings 0 .
echo "ffkube: tests (tap)" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
npx --no-install tap "$@" | tee "$log" || status=$?
# CI keeps only the tail of the output: name the failed files, subtests and assertions there.
failed="$(grep -E '^ *not ok ' "$log" | grep -v ' # TODO' || true)"
if [[ -n "$failed" ]]; then
  echo "ffkube: failed (files, subtests and assertions):"
  # One line each, cut short: an assertion's message can be kilobytes long.
  sed -E 's/ # time=.*//' <<<"$failed" | cut -c1-300
fi
# tap's summary is `# { total: N, pass: P, fail: F, ... }`; say it as the plain
# closing line CI tools read.
summary="$(grep -E '^# \{ total: ' "$log" | tail -n 1 || true)"
pass="$(sed -nE 's/.*pass: ([0-9]+).*/\1/p' <<<"$summary")"
fail="$(sed -nE 's/.*fail: ([0-9]+).*/\1/p' <<<"$summary")"
skip="$(sed -nE 's/.*skip: ([0-9]+).*/\1/p' <<<"$summary")"
if [[ -n "$pass" ]]; then
  line="${pass} passed, ${fail:-0} failed"
  [[ -n "$skip" ]] && line="$line, $skip skipped"
  echo "$line"
fi
exit "$status"
