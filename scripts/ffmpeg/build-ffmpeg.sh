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
#   scripts/ffmpeg/build-ffmpeg.sh --key     what the binaries are built from: a hash of
#                                            this script less its comments and blank lines
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

# libxml2, which FFmpeg's DASH demuxer parses manifests with (--enable-libxml2),
# compiled here from Debian bookworm's source package: its release tarball and
# the Debian revision's patches (the security fixes). Not bookworm's libxml2-dev:
# its libxml2.a is built with ICU, and linking ICU statically adds its ~30 MB
# data table to each binary, for encodings a DASH manifest (UTF-8) never uses;
# and it has the HTTP/FTP clients and the XML catalogs, which LIBXML2_CONFIGURE_FLAGS
# leave out. To bump: the version and the sha256 of both files of a newer
# bookworm revision (https://deb.debian.org/debian/pool/main/libx/libxml2/).
LIBXML2_VERSION=2.9.14+dfsg
LIBXML2_DEBIAN_REVISION=1.3~deb12u6
LIBXML2_ORIG_SHA256=4fe913dec8b1ab89d13b489b419a8203176ea39e931eaa0d25b17eafb9c279e9
LIBXML2_DEBIAN_SHA256=f33a99a0018cbb94aadc3bf26661e401cb90dff856aa170faf7239151ee9b9ac
LIBXML2_POOL=(
  "https://deb.debian.org/debian/pool/main/libx/libxml2"
  "http://deb.debian.org/debian/pool/main/libx/libxml2"
)
# Only the parser and tree FFmpeg uses: no network clients (http, ftp), no
# catalogs (they read /etc/xml), no XInclude/XPointer, no dlopen'ed modules,
# no compressed documents, no ICU or iconv (UTF-8, UTF-16 and Latin-1 are built in).
LIBXML2_CONFIGURE_FLAGS=(
  --disable-shared --enable-static
  --without-python --without-icu --without-iconv --without-zlib --without-lzma
  --without-http --without-ftp --without-catalog --without-xinclude --without-xptr
  --without-modules --without-debug
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

# contracts/ffmpeg-filters.ts's ALLOWED_FILTERS, and the sources the tests and
# the README make clips with (`-f lavfi -i testsrc2`; the policy refuses lavfi
# in a command). test/smoke/ffmpeg-build.test.ts fails when the policy allows
# a filter this list leaves out.
FILTERS=(
  acompressor acrossfade aecho afade aformat alimiter aloop alphaextract alphamerge amerge amix
  amovie anull apad aresample areverse aselect asetpts asetrate ashowinfo asplit ass astats atempo
  atrim blackdetect blend boxblur bwdif channelmap channelsplit chromakey colorbalance
  colorchannelmixer colorkey concat copy crop cropdetect curves deband decimate drawbox drawgrid
  drawtext dynaudnorm ebur128 eq equalizer fade fillborders format fps framerate framestep gblur
  geq hflip highpass histogram hqdn3d hstack hue idet interlace join loop loudnorm lowpass lut
  lut1d lut3d lutrgb lutyuv minterpolate movie mpdecimate negate nlmeans noise null overlay pad
  palettegen paletteuse pan reverse rotate scale scale2ref select setdar setfield setparams setpts
  setsar showinfo showspectrum showspectrumpic showwaves showwavespic silencedetect silenceremove
  smartblur split subtitles thumbnail tile tinterlace tpad transpose trim unsharp vflip vignette
  volume volumedetect vstack xfade xstack yadif zoompan
  testsrc testsrc2 smptebars smptehdbars rgbtestsrc yuvtestsrc color nullsrc allrgb allyuv life
  mandelbrot cellauto sine anullsrc anoisesrc aevalsrc
)
# contracts/ffmpeg-formats.ts's ALLOWED_DEMUXERS, with the concat, HLS and DASH
# demuxers contracts/ffmpeg-inputs.ts runs on work-dir lists, by configure's
# names (mpeg is mpegps, s16le is pcm_s16le, png_pipe is image_png_pipe...).
# Every input and probe already runs under -format_whitelist of these.
DEMUXERS=(
  aac ac3 aiff amr apng asf ass avi caf concat dash dts dv eac3 flac flv gif h264 hevc hls image2
  image_bmp_pipe image_gif_pipe image_jpeg_pipe image_png_pipe image_tiff_pipe image_webp_pipe ivf
  m4v matroska mjpeg mov mp3 mpegps mpegts mpegvideo mxf nut ogg pcm_f32le pcm_s16le pcm_u8
  rawvideo srt truehd w64 wav webvtt wv yuv4mpegpipe
)

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
  # libxml2: the DASH demuxer (.mpd inputs, contracts/ffmpeg-dash-inputs.ts).
  --enable-libxml2
  # The runner fetches inputs itself and the policy lets ffmpeg open local
  # files only (-protocol_whitelist file): no network protocols, no capture
  # devices (v4l2, fbdev, oss). lavfi stays: the tests make their clips with
  # `-f lavfi -i testsrc2` (the policy refuses it in a command).
  --disable-network --disable-indevs --enable-indev=lavfi --disable-outdevs
  --disable-shared --enable-static
  --pkg-config-flags=--static
  # Only the filters and demuxers a command can reach through the policy: what
  # is not built cannot be reached whatever the policy misses, and the build
  # compiles a quarter fewer files. Muxers all stay: an output's extension
  # picks one, and the policy leaves that choice to the user.
  --disable-filters "${FILTERS[@]/#/--enable-filter=}"
  --disable-demuxers "${DEMUXERS[@]/#/--enable-demuxer=}"
)

case "${1:-}" in
  --version) printf '%s\n' "$FFMPEG_VERSION"; exit 0 ;;
  --build-packages) printf '%s\n' "${BUILD_PACKAGES[@]}"; exit 0 ;;
  --runtime-packages) printf '%s\n' "${RUNTIME_PACKAGES[@]}"; exit 0 ;;
  # Everything that decides the binaries is in this script's code (the pins,
  # the flags, the packages, the steps); its comments are not.
  --key) grep -Ev '^[[:space:]]*(#|$)' "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16; exit 0 ;;
  '' | -*) printf 'usage: build-ffmpeg.sh DIR | --version | --build-packages | --runtime-packages | --key\n' >&2; exit 2 ;;
esac
out="$(mkdir -p "$1" && cd "$1" && pwd)"

log() { printf 'build-ffmpeg: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
srccache="${FFMPEG_SRC_CACHE:-$work}"
mkdir -p "$srccache"
tarball="$srccache/ffmpeg_$FFMPEG_VERSION.orig.tar.xz"

# fetch FILE SHA256 URL...: FILE from the first URL whose bytes match the pin
# (kept in $srccache when they already do).
fetch() {
  local file="$1" sha="$2" url
  shift 2
  [[ -f "$file" && "$(sha256sum "$file" | cut -d' ' -f1)" == "$sha" ]] && return 0
  rm -f "$file"
  for url in "$@"; do
    log "fetching $url"
    if curl -fsSL --retry 2 -o "$file.tmp" "$url" && [[ "$(sha256sum "$file.tmp" | cut -d' ' -f1)" == "$sha" ]]; then
      mv "$file.tmp" "$file"
      return 0
    fi
    rm -f "$file.tmp"
  done
  return 1
}
fetch "$tarball" "$FFMPEG_SHA256" "${FFMPEG_URLS[@]}" ||
  die "no URL served FFmpeg $FFMPEG_VERSION with sha256 $FFMPEG_SHA256 (Debian's pool drops superseded versions): bump FFMPEG_VERSION and FFMPEG_SHA256 in ${BASH_SOURCE[0]} to a version in https://deb.debian.org/debian/pool/main/f/ffmpeg/"
xml_orig="libxml2_$LIBXML2_VERSION.orig.tar.xz"
xml_debian="libxml2_$LIBXML2_VERSION-$LIBXML2_DEBIAN_REVISION.debian.tar.xz"
for pair in "$xml_orig $LIBXML2_ORIG_SHA256" "$xml_debian $LIBXML2_DEBIAN_SHA256"; do
  read -r file sha <<<"$pair"
  fetch "$srccache/$file" "$sha" "${LIBXML2_POOL[@]/%//$file}" ||
    die "no URL served $file with sha256 $sha (Debian's pool drops superseded revisions): bump LIBXML2_* in ${BASH_SOURCE[0]} to a bookworm revision in ${LIBXML2_POOL[0]}/"
done

# libxml2 into $work/libxml2 (a static library, its headers and its .pc, which
# FFmpeg's configure finds through PKG_CONFIG_PATH before any system one).
tar -xJf "$srccache/$xml_orig" -C "$work"
xmlsrc="$work/libxml2-${LIBXML2_VERSION%+dfsg}"
tar -xJf "$srccache/$xml_debian" -C "$xmlsrc"
log "building libxml2 $LIBXML2_VERSION-$LIBXML2_DEBIAN_REVISION"
(
  cd "$xmlsrc"
  grep -Ev '^[[:space:]]*(#|$)' debian/patches/series | while read -r patch; do
    patch -p1 -s --no-backup-if-mismatch <"debian/patches/$patch" || die "Debian's patch $patch does not apply"
  done
  # One patch edits Makefile.am (a test): the release's generated files stay
  # current, so make does not ask for automake, which the build does not install.
  touch configure.ac aclocal.m4 configure Makefile.am Makefile.in config.h.in
  ./configure --prefix="$work/libxml2" "${LIBXML2_CONFIGURE_FLAGS[@]}" >"$work/libxml2-configure.log" 2>&1 &&
    make -j"${FFMPEG_JOBS:-2}" libxml2.la >"$work/libxml2-make.log" 2>&1 &&
    make install-libLTLIBRARIES install-pkgconfigDATA >>"$work/libxml2-make.log" 2>&1 &&
    make -C include install >>"$work/libxml2-make.log" 2>&1
) || { tail -30 "$work"/libxml2-*.log >&2; die "building libxml2 failed"; }
export PKG_CONFIG_PATH="$work/libxml2/lib/pkgconfig"

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
