#!/usr/bin/env bash
# Builds the web console (console/) into dist/console, which the API role serves
# at /console/: type-checks it (tsc, its own tsconfig with the DOM types), bundles
# it with esbuild (Preact, the typed client in client/, the page's code: one ES
# module), and copies index.html and the stylesheet beside it. Skipped when the
# sources, the client, the lockfile and this script are what the last build used.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=dist/console
key="$( (find console client -type f -print0 | sort -z | xargs -0 sha256sum; sha256sum package-lock.json "${BASH_SOURCE[0]}") | sha256sum | cut -c1-16)"
if [[ -f "$out/.build-key" && "$(cat "$out/.build-key")" == "$key" ]]; then exit 0; fi
echo "ffkube: build the console (tsc, esbuild)" >&2
node_modules/.bin/tsc -p console/tsconfig.json
next="$(mktemp -d dist/.console-XXXXXX)"
trap 'rm -rf "$next"' EXIT
node_modules/.bin/esbuild console/src/main.tsx --bundle --format=esm --target=es2022 --minify --sourcemap \
  --jsx=automatic --jsx-import-source=preact --legal-comments=linked --log-level=warning --outfile="$next/console.js"
cp console/index.html console/console.css "$next/"
printf '%s' "$key" >"$next/.build-key"
chmod 755 "$next"
rm -rf "$out"
mv "$next" "$out"
trap - EXIT
