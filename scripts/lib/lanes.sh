# Steps side by side, for scripts/provision.sh (sourced, never run). A lane is a
# function run in the background, its output prefixed with `[name] `; a lane can
# wait for others to end first (`after NAME...`); the first lane that fails stops
# every other and fails the whole, as `set -e` would in a serial script.
#
#   lanes_start [--markers DIR] [--locks DIR]
#   lane go      provision_nats provision_ferretdb
#   lane ffmpeg  after apt -- provision_ffmpeg
#   lane kube    nice 15 provision_kube
#   lanes_wait   # 0 when every lane succeeded; else the first failure's status
#
# A lane runs its functions in order under `set -euo pipefail`, in a subshell: a
# function's `exit 1` ends its lane, not the script. Stopping a lane stops the
# whole tree of processes it started (the go, make or apt-get). Not job control
# (`set -m`): bash then reaps and reports jobs on its own, and `wait` loses them.
#
# --markers DIR: each lane leaves NAME.ok or NAME.failed in DIR, a folder the
# caller owns and reads while the lanes run (scripts/test.sh starts tests once
# the lanes they need are done); by default a private folder, removed at the end.
# --locks DIR: a lane holds DIR/lane-NAME while it runs its steps, so two runs
# at once (npm test's provisioning and an `npm start` one of its tests runs) take
# turns per lane, not per run: a lane another run already finished is a stamp check.
# `nice N`: the lane's processes run at that niceness (0 to 19), taking the CPU
# the others leave.

lanes_markers=""
lanes_markers_owned=""
lanes_locks=""
lanes_pids=()
lanes_names=()

lanes_start() {
  lanes_markers=""
  lanes_locks=""
  while (($# > 0)); do
    case "$1" in
      --markers) lanes_markers="$2"; shift 2 ;;
      --locks) lanes_locks="$2"; shift 2 ;;
      *) printf 'lanes_start: unknown argument %s\n' "$1" >&2; return 2 ;;
    esac
  done
  if [[ -n "$lanes_markers" ]]; then
    lanes_markers_owned=""
    mkdir -p "$lanes_markers"
    # A folder used before must not say a lane of this run is done.
    rm -f "$lanes_markers"/*.ok "$lanes_markers"/*.failed
  else
    lanes_markers="$(mktemp -d)"
    lanes_markers_owned=1
  fi
  [[ -z "$lanes_locks" ]] || mkdir -p "$lanes_locks"
  trap 'lanes_stop; exit 130' INT
  trap 'lanes_stop; exit 143' TERM
}

# lane NAME [nice N] [after NAME... --] FUNCTION... — runs the functions in order, in the background.
lane() {
  local name="$1" niceness="" waits=()
  shift
  if [[ "${1:-}" == nice ]]; then
    niceness="$2"
    shift 2
  fi
  if [[ "${1:-}" == after ]]; then
    shift
    while [[ "$1" != -- ]]; do waits+=("$1"); shift; done
    shift
  fi
  # No lane reads a terminal: several at once would fight over it.
  (
    trap - INT TERM
    set +e
    local started=$SECONDS
    (
      set -euo pipefail
      # Before anything starts, so every process of the lane inherits it.
      [[ -z "$niceness" ]] || renice -n "$niceness" -p "$BASHPID" >/dev/null
      if [[ ${#waits[@]} -gt 0 ]]; then
        lane_after "$name" "${waits[@]}"
        # A cold run's log says where the time went; a warm one (every step a stamp check) stays quiet.
        ((SECONDS - started < 10)) || printf 'lanes: started after %d s (waited for %s)\n' "$((SECONDS - started))" "${waits[*]}"
      fi
      [[ -z "$lanes_locks" ]] || lane_lock "$name"
      local step
      for step in "$@"; do "$step"; done
    ) 2>&1 | sed -u "s/^/[$name] /" >&2
    local status="${PIPESTATUS[0]}"
    if [[ "$status" -eq 0 ]]; then : >"$lanes_markers/$name.ok"; else printf '%s' "$status" >"$lanes_markers/$name.failed"; fi
    if ((status != 0)); then
      printf '[%s] lanes: failed (exit %d) after %d s\n' "$name" "$status" "$((SECONDS - started))" >&2
    elif ((SECONDS - started >= 10)); then
      printf '[%s] lanes: done after %d s\n' "$name" "$((SECONDS - started))" >&2
    fi
    exit "$status"
  ) </dev/null &
  lanes_pids+=("$!")
  lanes_names+=("$name")
}

# Waits until each named lane has succeeded; exits (ending this lane) if one failed.
lane_after() {
  local self="$1" other
  shift
  for other in "$@"; do
    until [[ -e "$lanes_markers/$other.ok" ]]; do
      if [[ -e "$lanes_markers/$other.failed" ]]; then
        printf 'lanes: %s does not start: %s failed\n' "$self" "$other" >&2
        exit 1
      fi
      sleep 0.2
    done
  done
}

# Holds DIR/lane-NAME until the lane's subshell ends (the descriptor closes with it).
lane_lock() {
  local name="$1" fd
  exec {fd}>"$lanes_locks/lane-$name"
  if ! flock -n "$fd"; then
    printf 'lanes: waiting for another run'"'"'s %s lane to end\n' "$name"
    flock "$fd"
  fi
}

# kill_tree PID — stops PID and everything it started: frozen first, so nothing new starts meanwhile.
lanes_kill_tree() {
  local pid="$1" child
  kill -STOP "$pid" 2>/dev/null || return 0
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do lanes_kill_tree "$child"; done
  kill -TERM "$pid" 2>/dev/null || true
  kill -CONT "$pid" 2>/dev/null || true
}

# Stops every lane still running, each with what it started.
lanes_stop() {
  local pid
  for pid in "${lanes_pids[@]}"; do lanes_kill_tree "$pid"; done
  for pid in "${lanes_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  lanes_pids=()
}

# The first lane that failed (NAME STATUS), or nothing while none has; a lane gone without a word failed too.
lanes_failure() {
  local i name
  for i in "${!lanes_names[@]}"; do
    name="${lanes_names[$i]}"
    if [[ -e "$lanes_markers/$name.failed" ]]; then
      printf '%s %s' "$name" "$(cat "$lanes_markers/$name.failed")"
      return
    fi
    if [[ ! -e "$lanes_markers/$name.ok" ]] && ! kill -0 "${lanes_pids[$i]}" 2>/dev/null; then
      # It may have written its marker since the first look.
      [[ -e "$lanes_markers/$name.ok" || -e "$lanes_markers/$name.failed" ]] && continue
      printf '%s 1' "$name"
      return
    fi
  done
}

# Waits for every lane; on the first failure stops the rest. Returns the first failure's status, else 0.
lanes_wait() {
  local name pending failure
  while :; do
    failure="$(lanes_failure)"
    [[ -z "$failure" ]] || break
    pending=0
    for name in "${lanes_names[@]}"; do [[ -e "$lanes_markers/$name.ok" ]] || pending=1; done
    ((pending)) || break
    sleep 0.2
  done
  if [[ -n "$failure" ]]; then
    printf 'lanes: %s failed (exit %s); stopping the others\n' "${failure% *}" "${failure##* }" >&2
    lanes_stop
    lanes_end
    return "${failure##* }"
  fi
  for name in "${lanes_pids[@]}"; do wait "$name" 2>/dev/null || true; done
  lanes_pids=()
  lanes_end
  return 0
}

lanes_end() {
  [[ -z "$lanes_markers_owned" ]] || rm -rf "$lanes_markers"
  lanes_names=()
  trap - INT TERM
}
