#!/usr/bin/env bash
# Runs the tests on a busy machine, as the suite must pass there: COMMAND
# (default scripts/test.sh) RUNS times in a row (default 5) beside two CPU
# hogs and a loop that flips /sys/module/fuse/parameters/enable_uring every
# second, as another process sharing the machine may. The loop takes the
# tests' lock for each flip (tests/it/common/machine.rs), as anything that
# changes machine-wide state beside the suite must; it sets the switch back
# at the end. Stops at the first failed run. Needs root.
# usage: scripts/busy.sh [--runs N] [-- COMMAND...]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --) shift; break ;;
    *) echo "busy.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || set -- scripts/test.sh
switch=/sys/module/fuse/parameters/enable_uring
lock=/run/lock/novelfs-tests.lock
[ -d /run/lock ] || lock=/tmp/novelfs-tests.lock
pids=()
before=""
[ -e "$switch" ] && before=$(cat "$switch")
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -z "$before" ] || flock "$lock" sh -c "echo $before > $switch"
}
trap stop EXIT
for _ in 1 2; do
  ( while :; do :; done ) &
  pids+=($!)
done
if [ -n "$before" ]; then
  ( while :; do
      flock "$lock" sh -c "if [ \"\$(cat $switch)\" = Y ]; then echo N > $switch; else echo Y > $switch; fi"
      sleep 1
    done ) &
  pids+=($!)
fi
for run in $(seq "$runs"); do
  start=$(date +%s)
  if "$@"; then
    echo "busy.sh: run $run of $runs passed in $(( $(date +%s) - start )) s"
  else
    echo "busy.sh: run $run of $runs FAILED after $(( $(date +%s) - start )) s" >&2
    exit 1
  fi
done
echo "busy.sh: $runs of $runs runs passed beside two CPU hogs and an enable_uring flipper"
