#!/usr/bin/env bash
# `npm run pin-ytdlp -- <version|latest>`: moves the pinned yt-dlp, for local mode and the
# images, in one step. yt-dlp's extractors follow the sites they scrape, so when downloads
# start failing the fix is usually a newer yt-dlp, not a change of ours.
#   1. checks that PyPI has that version (`latest`: PyPI's newest release);
#   2. writes it into scripts/provision.sh (YTDLP_VERSION) and runner-image/Dockerfile
#      (ARG YTDLP_VERSION), which test/chart/dockerfiles.test.ts keeps equal;
#   3. installs it for local mode (scripts/provision.sh ytdlp; a running `npm start`
#      takes it at its next yt-dlp command);
#   4. rebuilds the images when this machine builds them (scripts/build-images.sh, after
#      `npm test` provisioned BuildKit); otherwise says how.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
want="${1:-}"
if [[ -z "$want" || "$#" -gt 1 ]]; then
  echo "usage: npm run pin-ytdlp -- <version|latest>   (e.g. 2026.10.26)" >&2
  exit 2
fi
if [[ "$want" != latest && ! "$want" =~ ^[0-9]{4}\.[0-9]{1,2}\.[0-9]{1,2}(\.[0-9]+|\.post[0-9]+)?$ ]]; then
  echo "pin-ytdlp: '$want' is not a yt-dlp release version (YYYY.MM.DD) or 'latest'" >&2
  exit 2
fi
index="${PYPI_URL:-https://pypi.org/pypi}"
version="$(python3 - "$index" "$want" <<'PY'
import json, sys, urllib.request
index, want = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(f"{index}/yt-dlp/json", timeout=60) as answer:
    project = json.load(answer)
if want == "latest":
    print(project["info"]["version"])
elif project["releases"].get(want):
    print(want)
else:
    sys.exit(f"pin-ytdlp: PyPI has no yt-dlp {want}")
PY
)"
provision="$root/scripts/provision.sh"
dockerfile="$root/runner-image/Dockerfile"
old="$(sed -nE 's/^YTDLP_VERSION=(.*)$/\1/p' "$provision")"
sed -i -E "s/^YTDLP_VERSION=.*/YTDLP_VERSION=$version/" "$provision"
sed -i -E "s/^ARG YTDLP_VERSION=.*/ARG YTDLP_VERSION=$version/" "$dockerfile"
echo "pin-ytdlp: yt-dlp $old -> $version in scripts/provision.sh and runner-image/Dockerfile" >&2
bash "$provision" ytdlp
cache="${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
if [[ -x "$cache/bin/buildctl" || -x "$cache/buildkit/bin/buildctl" ]]; then
  bash "$root/scripts/build-images.sh"
else
  echo "pin-ytdlp: rebuild the runner image to ship it: bash scripts/build-images.sh (or docker build, docs/operations/install.md)" >&2
fi
echo "pin-ytdlp: local mode runs yt-dlp $("$cache/bin/yt-dlp" --version); commit the two files" >&2
