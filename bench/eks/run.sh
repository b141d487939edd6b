#!/usr/bin/env bash
# bench/eks: the cost of EKS authentication on a local workload cluster. Installs what it needs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
make -s venv
OKRA_ASSETS="$(hack/build-control-plane.sh)" exec .venv/bin/python bench/eks/run.py "$@"
