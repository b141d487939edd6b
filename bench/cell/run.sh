#!/usr/bin/env bash
# bench/cell: reaction time and idle AWS cost of a Cell. Installs what it needs on first use.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
make -s venv
OKRA_ASSETS="$(hack/build-control-plane.sh)" exec .venv/bin/python bench/cell/run.py "$@"
