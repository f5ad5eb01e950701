#!/usr/bin/env bash
# `npm test`: provision every real server the tests use, type-check and build,
# lint, then run every test with tap. Extra arguments go to tap (e.g. a file):
# then everything is provisioned first and tap runs once, as asked.
#
# tap runs the test files as tsc compiled them (test/x.test.ts as
# dist/test/x.test.js, its source map beside it, so a failure still names the
# .ts line): each file's Node then loads no TypeScript compiler.
#
# Without arguments, tap runs twice. Provisioning runs in the background; once
# its `local-parts` lane is done (FFmpeg, the servers of `npm start`, Python's
# tools, Debian's packages), the test files that need none of its background
# lanes run (scripts/test-phases.ts splits them by their imports) while those
# lanes (MinIO and the chart's tools, the cluster, the images), niced, build in
# the CPU time the tests leave; then, once provisioning has ended, the files
# that need them. A lane that fails fails `npm test` with its status, whenever
# it fails (docs/development/provisioning.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Everything below runs on the Node the images use, whatever Node launched npm.
source scripts/lib/node-runtime.sh
use_pinned_node "${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
bash scripts/ensure-deps.sh

log() { echo "ffkube: $*" >&2; }

build_and_lint() {
  log "type-check and build (tsc)"
  npx --no-install tsc -p tsconfig.json
  # The web console (dist/console), which test/console/browser.test.ts drives in Chromium.
  bash scripts/build-console.sh
  log "lint (eslint)"
  npx --no-install eslint --max-warnings 0 .
}

tap_log="$(mktemp)"
markers="$(mktemp -d)"
provisioning=""
stop_provisioning() {
  if [[ -n "$provisioning" ]]; then
    # Its TERM trap stops every lane with what it started (scripts/lib/lanes.sh).
    kill -TERM "$provisioning" 2>/dev/null || true
    wait "$provisioning" 2>/dev/null || true
  fi
  rm -rf "$tap_log" "$markers"
}
trap stop_provisioning EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# What every tap run of compiled files is given. tap 21's TypeScript plugin loads ts-node into
# every test's Node, .js file or not (2-6 CPU s a file: docs/benchmarks/cold-provisioning.md), unless
# `type-strip-only` is set; set here only, so that `npx tap test/x.test.ts` still runs a
# source file through ts-node. Removing the plugin instead (`plugin: ["!@tapjs/typescript"]`)
# would make tap rebuild its own test class inside node_modules.
TAP_COMPILED=(--type-strip-only)

# run_tap ARGS... — one tap run, its output also kept for the summary; its status in tap_status.
tap_status=0
run_tap() {
  local status=0
  # tap's status, not tee's: when a slow reader fills the pipe, tee can fail to write to the
  # output the tests' Node processes share (and set non-blocking) although every test passed.
  npx --no-install tap "${TAP_COMPILED[@]}" "$@" | tee -a "$tap_log" || status=${PIPESTATUS[0]}
  ((status == 0)) || tap_status=$status
}

# Waits until provisioning's lane NAME is done; exits with provisioning's status if it ends first.
await_lane() {
  local name="$1" status
  until [[ -e "$markers/$name.ok" ]]; do
    if ! kill -0 "$provisioning" 2>/dev/null; then
      status=0
      wait "$provisioning" || status=$?
      provisioning=""
      # Ended without that lane: failed, or a lane of this name no longer exists.
      log "provisioning ended (exit $status) before its $name lane was done"
      exit $((status == 0 ? 1 : status))
    fi
    sleep 1
  done
}

# Waits for the rest of provisioning; its status in provision_status.
provision_status=0
await_provisioning() {
  wait "$provisioning" || provision_status=$?
  provisioning=""
}

if (($# > 0)); then
  bash scripts/provision.sh test
  build_and_lint
  # The test files and folders named, as their compiled files; through a variable, so that a
  # failure fails here (set -e).
  listed="$(node dist/scripts/test-phases.js compiled "$@")"
  mapfile -t compiled <<<"$listed"
  log "tests (tap)"
  run_tap "${compiled[@]}"
else
  FFKUBE_LANE_MARKERS="$markers" bash scripts/provision.sh test &
  provisioning=$!
  await_lane local-parts
  build_and_lint
  # Through a variable, so that a failing split fails here (set -e) rather than run nothing.
  listed="$(node dist/scripts/test-phases.js early)"
  mapfile -t early <<<"$listed"
  listed="$(node dist/scripts/test-phases.js late)"
  mapfile -t late <<<"$listed"
  # tap without files would run every test: an empty run is a broken split, not a pass.
  [[ -n "${early[0]}" && -n "${late[0]}" ]] || { log "scripts/test-phases.ts listed no files for a run"; exit 1; }
  log "tests that need none of the background lanes (tap, ${#early[@]} files), while those build"
  # The harness waits for a background lane should a file that needs one be here after all.
  FFKUBE_TEST_LANE_MARKERS="$markers" run_tap "${early[@]}"
  await_provisioning
  if ((provision_status == 0)); then
    log "tests that need the background lanes: MinIO, the chart's tools, the cluster, the images (tap, ${#late[@]} files)"
    run_tap "${late[@]}"
  else
    log "provisioning failed (exit $provision_status): the ${#late[@]} files that need its background lanes did not run"
  fi
fi

# CI keeps only the tail of the output: name the failed files, subtests and assertions there.
failed="$(grep -E '^ *not ok ' "$tap_log" | grep -v ' # TODO' || true)"
if [[ -n "$failed" ]]; then
  echo "ffkube: failed (files, subtests and assertions):"
  # One line each, cut short: an assertion's message can be kilobytes long.
  sed -E 's/ # time=.*//' <<<"$failed" | cut -c1-300
fi
# Each tap run's summary is `# { total: N, pass: P, fail: F, ... }`; say their sum
# as the plain closing line CI tools read.
summary="$(grep -E '^# \{ total: ' "$tap_log" || true)"
sum() { sed -nE "s/.*$1: ([0-9]+).*/\\1/p" <<<"$summary" | awk '{ n += $1 } END { print n + 0 }'; }
if [[ -n "$summary" ]]; then
  line="$(sum pass) passed, $(sum fail) failed"
  skip="$(sum skip)"
  ((skip == 0)) || line="$line, $skip skipped"
  echo "$line"
fi
((provision_status == 0)) || exit "$provision_status"
exit "$tap_status"
