#!/usr/bin/env bash
# Fetches Debian packages without root and without installing them: `apt-get download` then
# `dpkg-deb -x`, into the user's cache directory, keyed by the packages' candidate versions, so
# a second run is instant. Safe to run twice at once (flock). Used by hack/prometheus.sh and
# hack/redis.sh for the real servers okra's tests run.
#
#   hack/debian-package.sh NAME PACKAGE...
#
# unpacks every PACKAGE into one root under <cache>/NAME/ and prints that root on stdout as its
# only output line; progress goes to stderr.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 NAME PACKAGE..." >&2; exit 2; }
name="$1"; shift

for tool in apt-cache apt-get dpkg-deb flock sha256sum; do
  command -v "$tool" >/dev/null || {
    echo "$tool is missing: $name needs Debian's packages ($*), or put $name on PATH" >&2
    exit 1
  }
done

pins=()
for pkg in "$@"; do
  version="$(apt-cache policy "$pkg" 2>/dev/null | sed -nE 's/^[[:space:]]*Candidate:[[:space:]]*//p' | head -n 1)"
  if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    echo "apt knows no $pkg package; run \`apt-get update\` (as root) or put $name on PATH" >&2
    exit 1
  fi
  pins+=("$pkg=$version")
done

cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"
first="${pins[0]#*=}"
key="${first//:/%3a}"
[ $# -eq 1 ] || key="${key}_$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-8)"
out="$cache_root/$name/$key"

if [ -f "$out/.complete" ]; then echo "$out"; exit 0; fi

mkdir -p "$cache_root/$name"
exec 9>"$cache_root/$name/.lock"
echo "waiting for the lock $cache_root/$name/.lock" >&2
flock 9
if [ -f "$out/.complete" ]; then echo "$out"; exit 0; fi

tmp="$(mktemp -d "$cache_root/$name/.fetch-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "downloading Debian's ${pins[*]}" >&2
(cd "$tmp" && apt-get download -q "${pins[@]}" >&2) || {
  echo "apt-get download ${pins[*]} failed; if the package index is stale run \`apt-get update\` (as root)" >&2
  exit 1
}
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
touch "$tmp/root/.complete"
rm -rf "$out"
mv "$tmp/root" "$out"
echo "$out"
