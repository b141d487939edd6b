#!/usr/bin/env bash
# Makes Debian's stress-ng available to `make test-stress` (hack/stress.sh), without root and
# without installing it: a `stress-ng` already on PATH is used as is; otherwise Debian's
# stress-ng, with the libraries it links that a minimal system lacks, is unpacked into the
# user's cache directory with a launcher beside it (hack/debian-launcher.sh). Prints the path
# of the `stress-ng` to run on stdout as its only output line.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/debian-launcher.sh" stress-ng 'libJudy.so.*' \
  stress-ng libjudydebian1 libsctp1 libipsec-mb1
