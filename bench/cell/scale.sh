#!/usr/bin/env bash
# bench/cell/scale.py: many Cells on one okra-manager. Installs what it needs on first use.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
make -s venv
OKRA_ASSETS="$(hack/build-control-plane.sh)" exec .venv/bin/python bench/cell/scale.py "$@"
