#!/usr/bin/env bash
# Regenerates charts/ffkube/README.md from the `# --` comments in values.yaml
# and charts/ffkube/README.md.gotmpl with helm-docs, which
# `bash scripts/provision.sh test` builds. test/chart/readme.test.ts fails
# when the committed README is stale.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
helm_docs="${FFKUBE_CACHE:-$HOME/.cache/ffkube}/bin/helm-docs"
[[ -x "$helm_docs" ]] || { echo "chart-docs: no helm-docs at $helm_docs: run bash scripts/provision.sh test" >&2; exit 1; }
"$helm_docs" --chart-search-root "${1:-charts/ffkube}" --sort-values-order file --skip-version-footer --log-level warning
