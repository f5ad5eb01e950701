# Shared by scripts/provision.sh and scripts/build-images.sh (sourced, never run):
# stamps of what was built from which inputs, Debian packages installed when
# missing, where ffmpeg is built, and the Go flags. Both callers define log()
# and set $root, $cache and $stamps first.

# Every Go build of provisioning. -dwarf=false: the compiler skips the debug
# information that the linker's -s -w (every build here passes it) throws away,
# which saves compile CPU and changes nothing the binary does; so it is not part
# of any stamp, and a cache built before keeps its binaries.
export GOFLAGS="-buildvcs=false -gcflags=all=-dwarf=false" GOTOOLCHAIN=local

# stamp NAME INPUTS... — true when NAME was built from exactly these inputs.
stamp_matches() {
  local name="$1"
  shift
  [[ -f "$stamps/$name" && "$(cat "$stamps/$name")" == "$*" ]]
}
write_stamp() {
  local name="$1"
  shift
  printf '%s' "$*" >"$stamps/$name"
}

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  if [[ $(id -u) -ne 0 ]]; then
    log "Debian packages missing: ${missing[*]}"
    log "install them as root: apt-get update && apt-get install -y ${missing[*]}"
    exit 1
  fi
  log "installing Debian packages: ${missing[*]}"
  # Two provisioning runs at once (npm test's and a test's npm start) take turns at dpkg's lock rather than fail on it.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The folder scripts/provision.sh builds ffmpeg into (scripts/ffmpeg/build-ffmpeg.sh):
# named after the pinned version and the script's key (a hash of its code, not
# its comments: a comment edit builds nothing again); scripts/build-images.sh
# hands it to the Dockerfiles so the images do not compile FFmpeg again.
ffmpeg_build_dir() {
  local script="$root/scripts/ffmpeg/build-ffmpeg.sh"
  printf '%s/ffmpeg-%s-%s' "$cache" "$(bash "$script" --version)" "$(bash "$script" --key)"
}
