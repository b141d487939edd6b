#!/usr/bin/env bash
# A program from Debian's packages, runnable without root and without installing it: one
# already on PATH is used as is; otherwise the packages are fetched and unpacked into the
# user's cache directory by hack/debian-package.sh, and a small launcher that sets
# LD_LIBRARY_PATH (to the directory of the first file matching LIB, one of the libraries it
# links that a minimal system lacks) is written beside them. Prints the path of the program
# to run on stdout as its only output line; progress goes to stderr.
#
#   hack/debian-launcher.sh PROGRAM LIB PACKAGE...
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 PROGRAM LIB PACKAGE..." >&2; exit 2; }
program="$1" lib="$2"; shift 2

if found="$(command -v "$program")"; then echo "$found"; exit 0; fi

root="$("$(dirname "${BASH_SOURCE[0]}")/debian-package.sh" "$program" "$@")"
launcher="$root/bin/$program"
if [ ! -x "$launcher" ]; then
  libdir="$(dirname "$(find "$root/usr/lib" -name "$lib" | head -n 1)")"
  mkdir -p "$root/bin"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$libdir" "$root/usr/bin/$program" >"$launcher.tmp"
  chmod +x "$launcher.tmp"
  mv "$launcher.tmp" "$launcher"
fi
"$launcher" --version >/dev/null 2>&1 || {
  echo "the unpacked $program ($launcher) does not run on this machine" >&2
  exit 1
}
echo "$launcher"
