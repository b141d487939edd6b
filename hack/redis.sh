#!/usr/bin/env bash
# Makes a real Redis server available to the Argo CD harness (Argo CD's repo-server and
# application-controller cache in Redis), without root and without installing a service: a
# `redis-server` already on PATH is used as is; otherwise Debian's redis-server (with the
# libraries it links that a minimal system lacks, liblzf1 and libjemalloc2) is fetched and
# unpacked into the user's cache directory by hack/debian-package.sh, and a small launcher that
# sets LD_LIBRARY_PATH is written beside it. Prints the path of the `redis-server` to run on
# stdout as its only output line; progress goes to stderr.
set -euo pipefail

if found="$(command -v redis-server)"; then echo "$found"; exit 0; fi

root="$("$(dirname "${BASH_SOURCE[0]}")/debian-package.sh" redis redis-server redis-tools liblzf1 libjemalloc2)"
launcher="$root/bin/redis-server"
if [ ! -x "$launcher" ]; then
  libdir="$(dirname "$(find "$root/usr/lib" -name 'libjemalloc.so.*' | head -n 1)")"
  mkdir -p "$root/bin"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$libdir" "$root/usr/bin/redis-server" >"$launcher.tmp"
  chmod +x "$launcher.tmp"
  mv "$launcher.tmp" "$launcher"
fi
"$launcher" --version >/dev/null 2>&1 || {
  echo "the unpacked redis-server ($launcher) does not run on this machine" >&2
  exit 1
}
echo "$launcher"
