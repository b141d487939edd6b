#!/usr/bin/env bash
# Makes a real Redis server available to the Argo CD harness (Argo CD's repo-server and
# application-controller cache in Redis), without root and without installing a service: a
# `redis-server` already on PATH is used as is; otherwise Debian's redis-server, with the
# libraries it links that a minimal system lacks (liblzf1 and libjemalloc2), is unpacked into
# the user's cache directory with a launcher beside it (hack/debian-launcher.sh). Prints the
# path of the `redis-server` to run on stdout as its only output line.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/debian-launcher.sh" redis-server 'libjemalloc.so.*' \
  redis-server redis-tools liblzf1 libjemalloc2
