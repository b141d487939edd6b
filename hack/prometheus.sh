#!/usr/bin/env bash
# Makes a real Prometheus server available to okra's tests (the Prometheus metric provider is
# tested against it), without root and without installing a service: a `prometheus` already on
# PATH is used as is; otherwise Debian's package is fetched with `apt-get download`, unpacked
# with `dpkg-deb -x` and cached under the user's cache directory, keyed by the package version,
# so a second run is instant. Safe to run twice at once (flock). Prints the path of the
# `prometheus` binary on stdout as its only output line; progress goes to stderr.
set -euo pipefail

if found="$(command -v prometheus)"; then echo "$found"; exit 0; fi

for tool in apt-cache apt-get dpkg-deb flock; do
  command -v "$tool" >/dev/null || {
    echo "prometheus is not on PATH and $tool is missing: install Prometheus (https://prometheus.io/download/) and put it on PATH" >&2
    exit 1
  }
done

version="$(apt-cache policy prometheus 2>/dev/null | sed -nE 's/^[[:space:]]*Candidate:[[:space:]]*//p' | head -n 1)"
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  echo "apt knows no prometheus package; run \`apt-get update\` (as root) or put prometheus on PATH" >&2
  exit 1
fi

cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"
out="$cache_root/prometheus/${version//:/%3a}"
bin="$out/usr/bin/prometheus"

if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

mkdir -p "$cache_root/prometheus"
exec 9>"$cache_root/prometheus/.lock"
echo "waiting for the lock $cache_root/prometheus/.lock" >&2
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

tmp="$(mktemp -d "$cache_root/prometheus/.fetch-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "downloading Debian's prometheus $version" >&2
(cd "$tmp" && apt-get download -q "prometheus=$version" >&2) || {
  echo "apt-get download prometheus=$version failed; if the package index is stale run \`apt-get update\` (as root)" >&2
  exit 1
}
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
"$tmp/root/usr/bin/prometheus" --version >&2 || {
  echo "the unpacked prometheus does not run on this machine" >&2
  exit 1
}
rm -rf "$out"
mv "$tmp/root" "$out"
echo "$bin"
