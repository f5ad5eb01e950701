#!/usr/bin/env bash
# Provisions the real servers and tools that ffkube's tests and `npm start` use,
# into a cache outside the checkout. Idempotent: a second run only checks stamps.
#
#   scripts/provision.sh [start|test|ytdlp]
#     ytdlp  yt-dlp alone, at YTDLP_VERSION (scripts/pin-ytdlp.sh moves it)
#     start  what `npm start` needs: ffmpeg, ffprobe, bwrap, nats-server, yt-dlp, ferretdb, versitygw
#     test   all of the above plus MinIO (the tests' customer-owned bucket), etcd,
#            kube-apiserver, helm and dockerfile-lint, a real single node: kubelet,
#            controller-manager, scheduler, kube-proxy, kubectl, containerd, CoreDNS,
#            kube-router and the images they run, and the two images built from our
#            Dockerfiles (scripts/build-images.sh), and Debian's Chromium for the
#            console's browser test (test/console/browser.test.ts), and Debian's
#            ffmpeg 5.1 as a bench baseline and the tests' network-capable player (default)
#
# Everything lands in $FFKUBE_CACHE (default ~/.cache/ffkube); bin/ holds one
# entry per tool, whether built here or linked from the system. Independent steps
# run side by side, each line prefixed with its lane's name (the end of this file,
# scripts/lib/lanes.sh, docs/development/provisioning.md).
set -euo pipefail

profile=test
for arg in "$@"; do
  case "$arg" in
    start | test | ytdlp) profile="$arg" ;;
    *) printf 'provision: unknown argument %s (usage: provision.sh [start|test|ytdlp])\n' "$arg" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FFKUBE_CACHE:-$HOME/.cache/ffkube}"
bin="$cache/bin"
stamps="$cache/stamps"
mkdir -p "$bin" "$stamps"

# Pinned versions. The Go ones are also pinned by each wrapper's go.mod/go.sum.
YTDLP_VERSION=2026.10.26
# The OpenAPI fuzzer `npm test` runs against the served document (test/api/openapi-fuzz.test.ts).
SCHEMATHESIS_VERSION=4.32.5
# The S3 server of local mode and of the tests' managed bucket (docs/adr/0007-versitygw.md):
# pinned by scripts/toolchain/versitygw/go.mod.
# The tests' customer-owned bucket only (storage destinations): the last MinIO commit
# published before upstream stopped maintaining it, a second S3 implementation beside versitygw.
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
HELM_VERSION=v3.22.0
# helm-docs: generates charts/ffkube/README.md from values.yaml (scripts/chart-docs.sh).
HELM_DOCS_VERSION=v1.14.2
CONTAINERD_VERSION=v2.4.2
# NATS: built from its Go module; docs/development/versions.md and the chart's README name it as the tested server.
NATS_SERVER_VERSION=v2.15.3
COREDNS_VERSION=v1.14.7
# The pause version of build/pause/Makefile in k8s.io/kubernetes $KUBE_VERSION; the
# -ffkube suffix says it is our build of it (test/harness/cluster/images.ts).
PAUSE_VERSION=3.10.2
BUSYBOX_PACKAGE=busybox-static

log() { printf 'provision: %s\n' "$*" >&2; }

# stamp_matches, write_stamp, apt_install, ffmpeg_build_dir; GOFLAGS.
source "$root/scripts/lib/provision-common.sh"

# Files of a wrapper module, hashed, so an edited go.mod or patch rebuilds.
tree_hash() {
  (cd "$1" && find . -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' -o -name '*.patch' \) -print0 |
    sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

link_system() {
  local name="$1" path="$2"
  [[ -x "$path" ]] || { log "$name not found at $path"; exit 1; }
  ln -sfn "$path" "$bin/$name"
}

provision_debian() {
  # bubblewrap: the sandbox of local mode's tools (contracts/sandbox.ts).
  apt_install bubblewrap
  # curl and jq: the README's quickstart calls the API with them (test/docs/quickstart.test.ts).
  # The service itself does not need them, so without root a missing one is only named.
  if [[ $(id -u) -eq 0 ]]; then
    apt_install curl jq
  else
    for tool in curl jq; do
      command -v "$tool" >/dev/null 2>&1 || log "$tool is missing (the README's quickstart uses it): apt-get install $tool"
    done
  fi
}

# ffmpeg and ffprobe: ffkube's own build (scripts/ffmpeg/build-ffmpeg.sh, docs/adr/0004-ffmpeg-build.md),
# the one the runner image builds too. Keyed on the script (version, hash, flags) and on the
# versions of the Debian packages it links, so a security update of one of them rebuilds.
provision_ffmpeg_packages() {
  local script="$root/scripts/ffmpeg/build-ffmpeg.sh" packages
  mapfile -t packages < <(bash "$script" --build-packages; bash "$script" --runtime-packages)
  apt_install "${packages[@]}"
}
provision_ffmpeg() {
  local script="$root/scripts/ffmpeg/build-ffmpeg.sh" version build_packages
  version="$(bash "$script" --version)"
  mapfile -t build_packages < <(bash "$script" --build-packages)
  provision_ffmpeg_packages
  local dir key
  dir="$(ffmpeg_build_dir)"
  key="$(dpkg-query -W -f='${Package}=${Version} ' "${build_packages[@]}" | sha256sum | cut -c1-16) $(cc -dumpfullversion -dumpversion)"
  if ! stamp_matches "$(basename "$dir")" "$key" || [[ ! -x "$dir/bin/ffmpeg" || ! -x "$dir/bin/ffprobe" ]]; then
    log "building FFmpeg $version into $dir (first time takes 20-40 min on 2 cores; cached)"
    local started=$SECONDS
    rm -rf "$dir" "$dir.tmp"
    FFMPEG_SRC_CACHE="$cache/src" nice -n 10 bash "$script" "$dir.tmp"
    mv "$dir.tmp" "$dir"
    write_stamp "$(basename "$dir")" "$key"
    log "building FFmpeg took $((SECONDS - started)) s"
  fi
  ln -sfn "$dir/bin/ffmpeg" "$bin/ffmpeg"
  ln -sfn "$dir/bin/ffprobe" "$bin/ffprobe"
}

# The test profile's Debian packages in one apt-get: Debian's ffmpeg, the node's
# packages and what scripts/build-images.sh runs (each step still checks its own).
provision_test_packages() {
  apt_install ffmpeg "${NODE_PACKAGES[@]}" "${CHROMIUM_PACKAGES[@]}" "${IMAGE_BUILD_PACKAGES[@]}"
}

# Debian's ffmpeg 5.1, test profile only: not what ffkube runs (provision_ffmpeg), never in
# bin/. It is /usr/bin/ffmpeg and /usr/bin/ffprobe: the old baseline of bench/local-mode.ts,
# and the tests' "standard player" with network protocols (test/harness/outputs.ts
# STANDARD_PLAYER), which ours is built without.
provision_debian_ffmpeg() {
  apt_install ffmpeg
}

# Debian's Chromium, which test/console/browser.test.ts drives through playwright-core
# (no browser download: the driver is pointed at bin/chromium). bin/chromium is the
# binary itself, not Debian's /usr/bin/chromium launcher script, which reads
# /etc/chromium.d and adds flags of its own. Run as root, Chromium needs --no-sandbox
# (its setuid/namespace sandbox refuses root); the test passes it only then.
CHROMIUM_PACKAGES=(chromium fonts-dejavu-core)
provision_chromium() {
  apt_install "${CHROMIUM_PACKAGES[@]}"
  link_system chromium /usr/lib/chromium/chromium
}

# yt-dlp from PyPI: Debian's build is years old and its extractors with it.
provision_ytdlp() {
  local python
  python="$(command -v python3)" || { log "python3 is required for yt-dlp"; exit 1; }
  if stamp_matches yt-dlp "$YTDLP_VERSION $python" && [[ -x "$bin/yt-dlp" ]]; then return 0; fi
  local dir="$cache/yt-dlp-$YTDLP_VERSION"
  log "installing yt-dlp $YTDLP_VERSION from PyPI"
  rm -rf "$dir"
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$dir" "yt-dlp==$YTDLP_VERSION"
  cat >"$bin/yt-dlp" <<EOF
#!/bin/sh
PYTHONPATH="$dir" exec "$python" -m yt_dlp "\$@"
EOF
  chmod +x "$bin/yt-dlp"
  write_stamp yt-dlp "$YTDLP_VERSION $python"
}

# Schemathesis from PyPI into its own venv: unlike yt-dlp it has dependencies
# (hypothesis, httpx, ...), which must not meet the system's Python packages.
provision_schemathesis() {
  local python
  python="$(command -v python3)" || { log "python3 is required for schemathesis"; exit 1; }
  local constraints="$root/scripts/toolchain/schemathesis-constraints.txt" key
  key="$SCHEMATHESIS_VERSION $python $(sha256sum "$constraints" | cut -c1-16)"
  if stamp_matches schemathesis "$key" && [[ -x "$bin/schemathesis" ]]; then return 0; fi
  local dir="$cache/schemathesis-$SCHEMATHESIS_VERSION"
  log "installing schemathesis $SCHEMATHESIS_VERSION from PyPI"
  rm -rf "$dir"
  "$python" -m venv "$dir" || { log "python3 -m venv failed: apt-get install python3-venv"; exit 1; }
  # Its dependencies pinned too, so the fuzz run does not change under a new Hypothesis.
  "$dir/bin/pip" install --quiet --disable-pip-version-check -c "$constraints" "schemathesis==$SCHEMATHESIS_VERSION"
  ln -sfn "$dir/bin/schemathesis" "$bin/schemathesis"
  write_stamp schemathesis "$key"
}

# go_build NAME MODULE_DIR PACKAGES LDFLAGS — builds a wrapper module's commands into bin/.
go_build() {
  local name="$1" dir="$2" pkgs="$3" ldflags="$4"
  local key
  key="$(tree_hash "$dir") $(go env GOVERSION) $ldflags"
  if stamp_matches "$name" "$key"; then return 0; fi
  log "building $name (first time takes minutes; cached in $cache)"
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/" $pkgs)
  write_stamp "$name" "$key"
}

# A module exactly as published, taken from the Go module cache (where go has checked it
# against go.sum or the checksum database), copied to $src/module and patched there with
# git apply: the patched dependencies' shared first half (ADR 0001, ADR 0007).
patched_module_copy() {
  local published="$1" src="$2" patches="$3" what="$4"
  [[ -d "$published" ]] || { log "go mod download gave no directory for $what"; exit 1; }
  rm -rf "$src"
  mkdir -p "$src"
  cp -R "$published" "$src/module"
  chmod -R u+w "$src/module"
  local patch
  for patch in "$patches"/*.patch; do
    # The ceiling keeps git from taking a repository around the cache for the target.
    (cd "$src/module" && GIT_CEILING_DIRECTORIES="$src" git apply --whitespace=nowarn "$patch") || { log "patch $(basename "$patch") does not apply to $what"; exit 1; }
  done
}

# FerretDB with ffkube's patches (docs/adr/0001-patched-ferretdb.md), built through a copy
# of the wrapper with a `replace` pointing at the patched copy. Its SQLite backend only:
# upstream's build tag leaves out the PostgreSQL backend and its driver (pgx), which
# nothing here runs (docs/benchmarks/cold-provisioning.md: 9 % of its cold build's CPU).
FERRETDB_TAGS=ferretdb_no_postgresql
provision_ferretdb() {
  local dir="$root/scripts/toolchain/ferretdb" key
  key="$(tree_hash "$dir") $(go env GOVERSION) $FERRETDB_TAGS"
  if stamp_matches ferretdb "$key" && [[ -x "$bin/ferretdb" ]]; then return 0; fi
  log "building ferretdb with ffkube's patches (first time takes minutes; cached in $cache)"
  local module=github.com/FerretDB/FerretDB src="$cache/src/ferretdb"
  patched_module_copy "$(cd "$dir" && go mod download "$module" && go list -m -f '{{.Dir}}' "$module")" "$src" "$dir/patches" "$module"
  cp "$dir/main.go" "$dir/go.mod" "$dir/go.sum" "$src/"
  (cd "$src" && go mod edit -replace "$module=./module" && go build -trimpath -tags "$FERRETDB_TAGS" -ldflags "-s -w" -o "$bin/ferretdb" .)
  write_stamp ferretdb "$key"
}

# versitygw with ffkube's patch (docs/adr/0007-versitygw.md), built as FerretDB is: through
# a copy of the wrapper (scripts/toolchain/versitygw: a main serving the posix backend alone,
# without upstream's other backends and their SDKs) with a `replace` pointing at the patched
# copy. Stamped with its version as its own release build is (Makefile LDFLAGS), so
# `versitygw --version` names what runs.
provision_versitygw() {
  local dir="$root/scripts/toolchain/versitygw" key version
  key="$(tree_hash "$dir") $(go env GOVERSION)"
  if stamp_matches versitygw "$key" && [[ -x "$bin/versitygw" ]]; then return 0; fi
  local module=github.com/versity/versitygw src="$cache/src/versitygw"
  version="$(cd "$dir" && go list -m -f '{{.Version}}' "$module")"
  log "building versitygw $version with ffkube's patch (first time takes a few minutes; cached in $cache)"
  patched_module_copy "$(cd "$dir" && go mod download "$module" && go list -m -f '{{.Dir}}' "$module")" "$src" "$dir/patches" "$module@$version"
  cp "$dir/main.go" "$dir/go.mod" "$dir/go.sum" "$src/"
  (cd "$src" && go mod edit -replace "$module=./module" &&
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=$version-ffkube -X main.BuildTime=none" -o "$bin/versitygw" .)
  write_stamp versitygw "$key"
}

provision_minio() {
  local key="$MINIO_VERSION $(go env GOVERSION)"
  if stamp_matches minio "$key" && [[ -x "$bin/minio" ]]; then return 0; fi
  log "building minio $MINIO_VERSION (first time takes minutes; cached in $cache)"
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "github.com/minio/minio@$MINIO_VERSION"
  write_stamp minio "$key"
}

provision_kube() {
  local v="k8s.io/component-base/version" minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  # All commands in one `go build`: they share most packages, so this is the cheapest.
  go_build kube "$root/scripts/toolchain/kube" "./cmd/..." \
    "-X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
  : "$ETCD_VERSION" # pinned in scripts/toolchain/kube/go.mod; named here for the README
}

# The single-node cluster's host packages (test/harness/cluster.ts): runc and the
# CNI plugins containerd runs, the tools kube-proxy and kube-router call, and a
# static busybox for the test images.
NODE_PACKAGES=(runc containernetworking-plugins iptables ipset nftables conntrack socat ethtool openssl "$BUSYBOX_PACKAGE")
provision_node_packages() {
  apt_install "${NODE_PACKAGES[@]}"
}

# containerd 2.x: Debian's 1.6 lacks the RuntimeConfig call the kubelet makes.
provision_containerd() {
  local key="$CONTAINERD_VERSION $(go env GOVERSION)" m=github.com/containerd/containerd/v2/cmd
  if stamp_matches containerd "$key" && [[ -x "$bin/containerd" ]]; then return 0; fi
  log "building containerd $CONTAINERD_VERSION (first time takes minutes; cached in $cache)"
  CGO_ENABLED=0 GOBIN="$bin" go install -trimpath -ldflags "-s -w" -tags "no_btrfs no_devmapper no_zfs" \
    "$m/containerd@$CONTAINERD_VERSION" "$m/containerd-shim-runc-v2@$CONTAINERD_VERSION" "$m/ctr@$CONTAINERD_VERSION"
  write_stamp containerd "$key"
}

# nats-server from its Go module: Debian bookworm's is 2.9.10 (2022), years behind what users run.
provision_nats() {
  local key="$NATS_SERVER_VERSION $(go env GOVERSION)"
  if stamp_matches nats-server "$key" && [[ -x "$bin/nats-server" && ! -L "$bin/nats-server" ]]; then return 0; fi
  log "building nats-server $NATS_SERVER_VERSION (first time takes a minute or two; cached in $cache)"
  rm -f "$bin/nats-server"
  CGO_ENABLED=0 GOBIN="$bin" go install -trimpath -ldflags "-s -w" "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
  write_stamp nats-server "$key"
}

provision_coredns() {
  local key="$COREDNS_VERSION $(go env GOVERSION)"
  if stamp_matches coredns "$key" && [[ -x "$bin/coredns" ]]; then return 0; fi
  log "building coredns $COREDNS_VERSION (first time takes minutes; cached in $cache)"
  CGO_ENABLED=0 GOBIN="$bin" go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
  write_stamp coredns "$key"
}

# kube-router, firewall only: the test node's NetworkPolicy enforcer (the kernel
# has no NFQUEUE, which kube-network-policies needs). Its wrapper module bumps
# the dependencies with reported flaws (scripts/toolchain/kube-router/go.mod).
provision_kube_router() {
  go_build kube-router "$root/scripts/toolchain/kube-router" "./cmd/kube-router" ""
}

# The images the test node runs, as `docker save` archives in images/ for
# `ctr images import`, each with NAME.ref holding its name:tag: pause (the
# sandbox image, from the kubelet's own source), CoreDNS, and a static busybox
# for test pods.
provision_node_images() {
  local images="$cache/images" archive="$root/scripts/toolchain/image-archive.sh"
  mkdir -p "$images"
  local pause_src
  pause_src="$(cd "$root/scripts/toolchain/kube" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
  local key
  key="$PAUSE_VERSION $(sha256sum "$pause_src" "$archive" | cut -c1-16 | tr '\n' ' ')$(cc -dumpfullversion -dumpversion)"
  if ! stamp_matches pause-image "$key" || [[ ! -f "$images/pause.tar" ]]; then
    log "building the pause image"
    local rootfs
    rootfs="$(mktemp -d)"
    cc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-ffkube" -o "$rootfs/pause" "$pause_src"
    strip "$rootfs/pause"
    bash "$archive" "$images/pause.tar" "registry.k8s.io/pause:$PAUSE_VERSION-ffkube" "$rootfs" '["/pause"]' 65535:65535
    printf '%s' "registry.k8s.io/pause:$PAUSE_VERSION-ffkube" >"$images/pause.ref"
    rm -rf "$rootfs"
    write_stamp pause-image "$key"
  fi
  key="$COREDNS_VERSION $(sha256sum "$bin/coredns" "$archive" | cut -c1-16 | tr '\n' ' ')"
  if ! stamp_matches coredns-image "$key" || [[ ! -f "$images/coredns.tar" ]]; then
    log "building the coredns image"
    local rootfs
    rootfs="$(mktemp -d)"
    cp "$bin/coredns" "$rootfs/coredns"
    bash "$archive" "$images/coredns.tar" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION-ffkube" "$rootfs" '["/coredns"]' 65532:65532
    printf '%s' "registry.k8s.io/coredns/coredns:$COREDNS_VERSION-ffkube" >"$images/coredns.ref"
    rm -rf "$rootfs"
    write_stamp coredns-image "$key"
  fi
  local busybox_version
  busybox_version="$(dpkg-query -W -f='${Version}' "$BUSYBOX_PACKAGE")"
  key="$busybox_version $(sha256sum "$archive" | cut -c1-16)"
  if ! stamp_matches busybox-image "$key" || [[ ! -f "$images/busybox.tar" ]]; then
    log "building the busybox image"
    local rootfs applet tag
    rootfs="$(mktemp -d)"
    mkdir -p "$rootfs/bin" "$rootfs/tmp"
    cp /bin/busybox "$rootfs/bin/busybox"
    for applet in $("$rootfs/bin/busybox" --list); do
      [[ "$applet" == busybox ]] || ln -s busybox "$rootfs/bin/$applet"
    done
    # The Debian version without its epoch, made a valid tag (no '+' or '~').
    tag="$(printf '%s' "${busybox_version#*:}" | tr '+~' '--')-ffkube"
    bash "$archive" "$images/busybox.tar" "ffkube.test/busybox:$tag" "$rootfs" '["/bin/sh"]' 65534:65534
    printf '%s' "ffkube.test/busybox:$tag" >"$images/busybox.ref"
    rm -rf "$rootfs"
    write_stamp busybox-image "$key"
  fi
}

# helm for the chart tests (test/chart/): no Debian package, so built from its
# Go module like versitygw. The ldflags are those of helm's own Makefile: its
# version, and the Kubernetes version its client-go (v0.37) speaks, which
# `helm lint` and `.Capabilities` use when no --kube-version is given.
provision_helm() {
  local key="$HELM_VERSION $(go env GOVERSION)"
  if stamp_matches helm "$key" && [[ -x "$bin/helm" ]]; then return 0; fi
  log "building helm $HELM_VERSION (first time takes minutes; cached in $cache)"
  local x=helm.sh/helm/v3 ldflags="-s -w"
  ldflags+=" -X $x/internal/version.version=$HELM_VERSION -X $x/internal/version.gitTreeState=clean"
  ldflags+=" -X $x/pkg/lint/rules.k8sVersionMajor=1 -X $x/pkg/lint/rules.k8sVersionMinor=37"
  ldflags+=" -X $x/pkg/chartutil.k8sVersionMajor=1 -X $x/pkg/chartutil.k8sVersionMinor=37"
  GOBIN="$bin" go install -trimpath -ldflags "$ldflags" "$x/cmd/helm@$HELM_VERSION"
  write_stamp helm "$key"
}

# helm-docs for the chart's README (scripts/chart-docs.sh, test/chart/readme.test.ts):
# no Debian package, so built from its Go module like helm.
provision_helm_docs() {
  local key="$HELM_DOCS_VERSION $(go env GOVERSION)"
  if stamp_matches helm-docs "$key" && [[ -x "$bin/helm-docs" ]]; then return 0; fi
  log "building helm-docs $HELM_DOCS_VERSION (cached in $cache)"
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION"
  write_stamp helm-docs "$key"
}

# BuildKit's Dockerfile checks (`docker build --check`) without Docker, for
# test/chart/dockerfiles.test.ts; buildkit is pinned by the wrapper's go.mod.
provision_dockerfile_lint() {
  go_build dockerfile-lint "$root/scripts/toolchain/dockerfile-lint" . ""
}

# The service and runner images, built by BuildKit from ./Dockerfile and
# runner-image/Dockerfile into archives a test cluster imports (dist/images.json
# names them). The script keeps its own pins and stamps. One run of it at a time
# (one buildkitd per state folder): run alone it takes $cache/.lock itself; the
# two lanes that run it here take that lock for it, so that another run's lane
# or a developer's build waits.
# What scripts/build-images.sh runs: BuildKit's runc worker and mmdebstrap.
IMAGE_BUILD_PACKAGES=(runc mmdebstrap)
provision_images() {
  FFKUBE_PROVISION_LOCKED=1 flock "$cache/.lock" bash "$root/scripts/build-images.sh"
}
# Its first half (BuildKit, the Debian rootfs, the Node base image), which needs no FFmpeg: beside FFmpeg's build.
provision_image_base() {
  FFKUBE_PROVISION_LOCKED=1 flock "$cache/.lock" bash "$root/scripts/build-images.sh" --base
}

# Independent steps run side by side (scripts/lib/lanes.sh): downloads beside
# compiles, the Go builds beside FFmpeg's C build (niced). Debian packages go in
# first and one apt-get at a time (dpkg has one lock): FFmpeg's build packages,
# then the rest while FFmpeg compiles. The images wait for the FFmpeg build they
# copy; the node images for busybox and the kube module.
#
# One run of a lane at a time (locks/lane-NAME): `npm test` and `npm start` may
# run side by side, and a test runs `npm start` while `npm test`'s background
# lanes still build. FFKUBE_LANE_MARKERS names a folder where each lane leaves
# NAME.ok or NAME.failed: scripts/test.sh starts the test files that need none
# of the background lanes once `local-parts` is there.
source "$root/scripts/lib/lanes.sh"
lanes_start --locks "$cache/locks" ${FFKUBE_LANE_MARKERS:+--markers "$FFKUBE_LANE_MARKERS"}
if [[ "$profile" == ytdlp ]]; then
  lane python provision_ytdlp
  lanes_wait
  exit
fi
lane apt-build provision_ffmpeg_packages
lane ffmpeg after apt-build -- provision_ffmpeg
if [[ "$profile" == start ]]; then
  lane apt after apt-build -- provision_debian
  lane python provision_ytdlp
  lane go provision_nats provision_ferretdb provision_versitygw
else
  lane apt after apt-build -- provision_debian provision_test_packages provision_debian_ffmpeg provision_node_packages provision_chromium
  lane python provision_ytdlp provision_schemathesis
  lane go provision_nats provision_ferretdb provision_versitygw
  # What `npm start` runs plus the tests' Debian and Python tools: what most test files need.
  lane local-parts after apt-build ffmpeg apt python go --
  # The background lanes: what only some test files need (MinIO, the chart's tools, the
  # single-node cluster, the images), niced. scripts/test.sh runs the other files once
  # local-parts is done; they take the CPU first and these builds take what they leave.
  lane go-tools nice 19 provision_minio provision_helm provision_helm_docs provision_dockerfile_lint
  lane kube nice 19 provision_kube provision_containerd provision_coredns provision_kube_router
  lane node-images nice 19 after apt kube -- provision_node_images
  lane image-base nice 19 after apt -- provision_image_base
  lane images nice 19 after image-base ffmpeg -- provision_images
fi
lanes_wait
