#!/usr/bin/env bash
# THE build of ffkube's ffmpeg and ffprobe (docs/adr/0004-ffmpeg-build.md): one
# pinned FFmpeg release, compiled with FFmpeg's own configure, the codec
# libraries linked statically from Debian bookworm's -dev packages. Local mode,
# the tests (scripts/provision.sh) and both images (Dockerfile,
# runner-image/Dockerfile) run this script, so the choice of version and flags
# lives here only.
#
#   scripts/ffmpeg/build-ffmpeg.sh DIR       build DIR/bin/ffmpeg, DIR/bin/ffprobe and
#                                            DIR/runtime-packages (what they need installed)
#   scripts/ffmpeg/build-ffmpeg.sh --version the pinned version
#   scripts/ffmpeg/build-ffmpeg.sh --build-packages  the Debian packages the build needs
#   scripts/ffmpeg/build-ffmpeg.sh --runtime-packages  the Debian packages the binaries need
#
# Needs the build packages installed (the caller installs them: provision.sh
# through apt_install, the Dockerfile through apt-get). Env: FFMPEG_JOBS (make -j,
# default 2), FFMPEG_SRC_CACHE (where the source tarball is kept, default a temp dir).
set -euo pipefail

# The pin. To bump: take the new version's .orig.tar.xz from Debian's pool
# (https://deb.debian.org/debian/pool/main/f/ffmpeg/), put its version and
# sha256 here, rebuild, and run test/smoke/ffmpeg-build.test.ts.
FFMPEG_VERSION=8.1.2
FFMPEG_SHA256=464beb5e7bf0c311e68b45ae2f04e9cc2af88851abb4082231742a74d97b524c
FFMPEG_URLS=(
  "https://deb.debian.org/debian/pool/main/f/ffmpeg/ffmpeg_$FFMPEG_VERSION.orig.tar.xz"
  "http://deb.debian.org/debian/pool/main/f/ffmpeg/ffmpeg_$FFMPEG_VERSION.orig.tar.xz"
  "https://ffmpeg.org/releases/ffmpeg-$FFMPEG_VERSION.tar.xz"
)

# Libraries linked statically (their .a from the -dev packages). Debian ships
# no .a for harfbuzz (drawtext needs it) and dav1d (the fast AV1 decoder):
# those two stay shared, with the few libraries harfbuzz itself links
# (RUNTIME_PACKAGES). SVT-AV1 has no .a either and is left out: libaom-av1
# encodes AV1.
STATIC_LIBS=(
  x264 x265 numa vpx aom opus mp3lame vorbis vorbisenc ogg theora theoraenc theoradec
  webp webpmux webpdemux z bz2 lzma freetype fontconfig expat fribidi png16 brotlidec brotlicommon ass
)
BUILD_PACKAGES=(
  build-essential nasm pkg-config xz-utils curl ca-certificates
  libx264-dev libx265-dev libnuma-dev libvpx-dev libaom-dev libdav1d-dev libopus-dev libmp3lame-dev
  libvorbis-dev libogg-dev libtheora-dev libwebp-dev zlib1g-dev libbz2-dev liblzma-dev
  libfreetype-dev libfontconfig-dev libexpat1-dev libfribidi-dev libharfbuzz-dev libpng-dev libbrotli-dev
  libass-dev
)
# drawtext's default font: without a fontfile (which may name only the
# command's own files, contracts/ffmpeg-filter-files.ts), the static fontconfig
# finds one through Debian's /etc/fonts/fonts.conf (fontconfig-config), which
# local mode's sandbox binds and the images install: DejaVu as "Sans".
RUNTIME_PACKAGES=(libharfbuzz0b libdav1d6 fontconfig-config fonts-dejavu-core)

CONFIGURE_FLAGS=(
  --enable-gpl --enable-version3
  --disable-doc --disable-ffplay --disable-debug
  # Nothing picked up by chance from the build machine: every library below is named.
  --disable-autodetect
  --enable-pthreads --enable-iconv --enable-zlib --enable-bzlib --enable-lzma
  --enable-libx264 --enable-libx265 --enable-libvpx --enable-libaom --enable-libdav1d
  --enable-libopus --enable-libmp3lame --enable-libvorbis --enable-libtheora --enable-libwebp
  --enable-libfreetype --enable-libfontconfig --enable-libfribidi --enable-libharfbuzz
  # libass: the subtitles and ass filters (burned-in subtitles), which the policy
  # allows on the command's own files (contracts/ffmpeg-filter-files.ts).
  --enable-libass
  # The runner fetches inputs itself and the policy lets ffmpeg open local
  # files only (-protocol_whitelist file): no network protocols, no capture
  # devices (v4l2, fbdev, oss). lavfi stays: the tests make their clips with
  # `-f lavfi -i testsrc2` (the policy refuses it in a command).
  --disable-network --disable-indevs --enable-indev=lavfi --disable-outdevs
  --disable-shared --enable-static
  --pkg-config-flags=--static
)

case "${1:-}" in
  --version) printf '%s\n' "$FFMPEG_VERSION"; exit 0 ;;
  --build-packages) printf '%s\n' "${BUILD_PACKAGES[@]}"; exit 0 ;;
  --runtime-packages) printf '%s\n' "${RUNTIME_PACKAGES[@]}"; exit 0 ;;
  '' | -*) printf 'usage: build-ffmpeg.sh DIR | --version | --build-packages | --runtime-packages\n' >&2; exit 2 ;;
esac
out="$(mkdir -p "$1" && cd "$1" && pwd)"

log() { printf 'build-ffmpeg: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
srccache="${FFMPEG_SRC_CACHE:-$work}"
mkdir -p "$srccache"
tarball="$srccache/ffmpeg_$FFMPEG_VERSION.orig.tar.xz"

# fetch: the first URL whose bytes match the pin.
if [[ ! -f "$tarball" ]] || [[ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$FFMPEG_SHA256" ]]; then
  rm -f "$tarball"
  for url in "${FFMPEG_URLS[@]}"; do
    log "fetching $url"
    if curl -fsSL --retry 2 -o "$tarball.tmp" "$url" && [[ "$(sha256sum "$tarball.tmp" | cut -d' ' -f1)" == "$FFMPEG_SHA256" ]]; then
      mv "$tarball.tmp" "$tarball"
      break
    fi
    rm -f "$tarball.tmp"
  done
  [[ -f "$tarball" ]] || die "no URL served FFmpeg $FFMPEG_VERSION with sha256 $FFMPEG_SHA256 (Debian's pool drops superseded versions): bump FFMPEG_VERSION and FFMPEG_SHA256 in ${BASH_SOURCE[0]} to a version in https://deb.debian.org/debian/pool/main/f/ffmpeg/"
fi

# The static libraries alone in one directory searched first: the linker then
# takes each of them as .a, and the shared ones (no .a here) from the system.
multiarch="$(gcc -print-multiarch)"
libdir="$work/static-libs"
mkdir -p "$libdir"
for name in "${STATIC_LIBS[@]}"; do
  a="/usr/lib/$multiarch/lib$name.a"
  [[ -f "$a" ]] || die "$a is missing: install $(printf '%s ' "${BUILD_PACKAGES[@]}")"
  ln -s "$a" "$libdir/"
done
# x265 is C++: its runtime linked in too, so the binaries need no libstdc++.
ln -s "$(g++ -print-file-name=libstdc++.a)" "$libdir/"

tar -xJf "$tarball" -C "$work"
src="$work/ffmpeg-$FFMPEG_VERSION"
cd "$src"
log "configuring FFmpeg $FFMPEG_VERSION"
./configure "${CONFIGURE_FLAGS[@]}" --extra-ldflags="-L$libdir" >"$work/configure.log" 2>&1 ||
  { tail -30 "$src/ffbuild/config.log" >&2; die "configure failed"; }
if [[ -n "${FFMPEG_CONFIGURE_ONLY:-}" ]]; then cat "$work/configure.log"; exit 0; fi
log "compiling (make -j${FFMPEG_JOBS:-2}; tens of minutes on 2 cores)"
make -j"${FFMPEG_JOBS:-2}" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; die "make failed"; }
mkdir -p "$out/bin"
install -m 0755 ffmpeg ffprobe "$out/bin/"
printf '%s\n' "${RUNTIME_PACKAGES[@]}" >"$out/runtime-packages"
log "built $("$out/bin/ffmpeg" -hide_banner -version | head -1) into $out"
