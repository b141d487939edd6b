#!/usr/bin/env bash
# Runs a command beside a CPU hog: Debian's stress-ng (hack/stress-ng.sh) keeps every core
# busy at STRESS_CPU_LOAD percent (default 50) for as long as the command runs, so that races
# a quiet machine hides show before CI or a user's busy control plane finds them. Prints the
# load average at the start and the end, the hog's own figures, and the command's wall time;
# exits with the command's status.
#
#   hack/stress.sh make test PYTEST_WORKERS=4
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND..." >&2; exit 2; }

load="${STRESS_CPU_LOAD:-50}"
cpus="$(nproc)"
sng="$("$(dirname "${BASH_SOURCE[0]}")/stress-ng.sh")"
"$sng" --cpu "$cpus" --cpu-load "$load" --metrics-brief &
hog=$!
trap 'kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true' EXIT
echo "stress: $cpus stress-ng CPU workers at $load% each; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$(date +%s)
status=0
"$@" || status=$?
echo "stress: the command took $(( $(date +%s) - start )) s and exited $status; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
