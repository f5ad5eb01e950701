#!/usr/bin/env bash
# Measures the CPU (user + sys, which load does not change much, unlike wall
# time) of one cold `go build` under several GOFLAGS, side by side so that the
# machine's load hits every variant alike. Each variant builds with its own
# empty GOCACHE; the module cache is shared (downloads are not what is measured:
# run `go mod download` in the module first). Prints one line per variant and
# `uptime` at the start and end (docs/benchmarks/cold-provisioning.md).
#
#   scripts/measure-go-build-cpu.sh OUT MODULE_DIR PACKAGES LDFLAGS NAME=GOFLAGS...
#   scripts/measure-go-build-cpu.sh /tmp/kube scripts/toolchain/kube ./cmd/... '-s -w' \
#     before=-buildvcs=false after='-buildvcs=false -gcflags=all=-dwarf=false'
set -euo pipefail
(($# >= 5)) || { sed -n '2,11p' "$0" >&2; exit 2; }
out="$1" module="$(cd "$2" && pwd)" packages="$3" ldflags="$4"
shift 4
rm -rf "$out"
mkdir -p "$out"
echo "start $(date -u +%T) $(uptime)"
pids=()
for variant in "$@"; do
  name="${variant%%=*}" flags="${variant#*=}"
  mkdir -p "$out/$name/bin"
  # shellcheck disable=SC2086 # PACKAGES is a list
  (cd "$module" && GOCACHE="$out/$name/gocache" GOFLAGS="$flags" GOTOOLCHAIN=local /usr/bin/time -f '%U %S %e' -o "$out/$name/time" \
    go build -trimpath -ldflags "$ldflags" -o "$out/$name/bin/" $packages >"$out/$name/build.log" 2>&1) &
  pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
echo "end $(date -u +%T) $(uptime)"
for variant in "$@"; do
  name="${variant%%=*}"
  # The last line: a failed command's status line comes first.
  read -r user sys wall < <(tail -n 1 "$out/$name/time")
  awk -v n="$name" -v u="$user" -v s="$sys" -v w="$wall" -v f="${variant#*=}" \
    'BEGIN { printf "%-10s user+sys %6.0f s (user %.0f, sys %.0f), wall %.0f s, GOFLAGS=%s\n", n, u + s, u, s, w, f }'

done
((status == 0)) || { echo "a build failed: $out/*/build.log" >&2; exit 1; }
