#!/usr/bin/env bash
# What an ffmpeg build costs to start (docs/adr/0004-ffmpeg-build.md): for each
# folder holding ffmpeg and ffprobe, the shared libraries they link, their
# size, and the CPU time (perf stat task-clock, mean of RUNS) of `ffmpeg
# -version`, an ffprobe of a 4 s 720p clip, and the tools-alone pair of a
# command: remux the clip, then ffprobe the output.
#
#   bench/ffmpeg-start.sh [DIR...]   default: ~/.cache/ffkube/bin (ffkube's build) and /usr/bin (Debian's 5.1)
#   RUNS=20 by default; needs perf (linux-perf).
set -euo pipefail
runs="${RUNS:-20}"
dirs=("$@")
((${#dirs[@]} > 0)) || dirs=("${FFKUBE_CACHE:-$HOME/.cache/ffkube}/bin" /usr/bin)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# cpu_ms COMMAND... — mean task-clock of RUNS runs, children included, in ms.
cpu_ms() { perf stat -r "$runs" -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ { printf "%.1f", $1 }'; }

"${dirs[0]}/ffmpeg" -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=25:duration=4 \
  -f lavfi -i sine=frequency=440:sample_rate=48000:duration=4 -c:v libx264 -preset ultrafast -pix_fmt yuv420p \
  -c:a aac -shortest "$work/clip.mp4"
printf '%-32s %8s %8s %10s %12s %12s %14s\n' build version 'libs' 'MB w/ libs' 'ffmpeg -v ms' 'ffprobe ms' 'remux+probe ms'
for dir in "${dirs[@]}"; do
  ffmpeg="$(readlink -f "$dir/ffmpeg")" ffprobe="$(readlink -f "$dir/ffprobe")"
  version="$("$ffmpeg" -hide_banner -version | awk 'NR == 1 { print $3 }')"
  libs="$(ldd "$ffmpeg" | grep -c '=>' || true)"
  # The binaries plus every shared library they load: what a build puts on disk.
  size="$({ printf '%s\n' "$ffmpeg" "$ffprobe"; ldd "$ffmpeg" "$ffprobe" | awk '$2 == "=>" { print $3 }'; } | sort -u | xargs du -cLm | awk 'END { print $1 }')"
  version_ms="$(cpu_ms "$ffmpeg" -hide_banner -version)"
  probe_ms="$(cpu_ms "$ffprobe" -v error -show_format -show_streams -of json "$work/clip.mp4")"
  pair_ms="$(cpu_ms sh -c '"$1" -nostdin -y -loglevel error -i "$3/clip.mp4" -c copy "$3/out.mp4" && "$2" -v error -show_format -show_streams -of json "$3/out.mp4"' sh "$ffmpeg" "$ffprobe" "$work")"
  printf '%-32s %8s %8s %10s %12s %12s %14s\n' "$dir" "$version" "$libs" "$size" "$version_ms" "$probe_ms" "$pair_ms"
done
