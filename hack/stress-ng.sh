#!/usr/bin/env bash
# Makes Debian's stress-ng available to `make test-stress`, without root and without installing
# it: a `stress-ng` already on PATH is used as is; otherwise Debian's stress-ng (with the
# libraries it links that a minimal system lacks) is fetched and unpacked into the user's cache
# directory by hack/debian-package.sh, and a small launcher that sets LD_LIBRARY_PATH is written
# beside it. Prints the path of the `stress-ng` to run on stdout as its only output line.
set -euo pipefail

if found="$(command -v stress-ng)"; then echo "$found"; exit 0; fi

root="$("$(dirname "${BASH_SOURCE[0]}")/debian-package.sh" stress-ng stress-ng libjudydebian1 libsctp1 libipsec-mb1)"
launcher="$root/bin/stress-ng"
if [ ! -x "$launcher" ]; then
  libdir="$(dirname "$(find "$root/usr/lib" -name 'libJudy.so.*' | head -n 1)")"
  mkdir -p "$root/bin"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$libdir" "$root/usr/bin/stress-ng" >"$launcher.tmp"
  chmod +x "$launcher.tmp"
  mv "$launcher.tmp" "$launcher"
fi
"$launcher" --version >/dev/null 2>&1 || {
  echo "the unpacked stress-ng ($launcher) does not run on this machine" >&2
  exit 1
}
echo "$launcher"
