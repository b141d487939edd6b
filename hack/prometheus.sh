#!/usr/bin/env bash
# Makes a real Prometheus server available to okra's tests (the Prometheus metric provider is
# tested against it), without root and without installing a service: a `prometheus` already on
# PATH is used as is; otherwise Debian's package is fetched and unpacked into the user's cache
# directory by hack/debian-package.sh. Prints the path of the `prometheus` binary on stdout as
# its only output line; progress goes to stderr.
set -euo pipefail

if found="$(command -v prometheus)"; then echo "$found"; exit 0; fi

root="$("$(dirname "${BASH_SOURCE[0]}")/debian-package.sh" prometheus prometheus)"
bin="$root/usr/bin/prometheus"
"$bin" --version >/dev/null 2>&1 || {
  echo "the unpacked prometheus ($bin) does not run on this machine" >&2
  exit 1
}
echo "$bin"
