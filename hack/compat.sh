#!/usr/bin/env bash
# The compatibility matrix (docs/compatibility.md): the subset of test/compat.py on each
# Kubernetes minor given (each built by hack/build-control-plane.sh MINOR) with the Argo CD
# that OKRA_ARGOCD holds, then okra's own reads and writes of Argo CD's objects
# (test/integration/progressiverollout) against each release in COMPAT_ARGOCD_CRDS whose
# controller cannot be built here (its CRDs only, from hack/argocd-crds.sh). One line per cell
# as it ends, the matrix as a Markdown table at the end; exits 1 when a cell failed.
#
#   hack/compat.sh 1.32 1.37                    # PYTEST_WORKERS, COMPAT_ARGOCD_CRDS honoured
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
[ $# -ge 1 ] || { echo "usage: $0 MINOR..." >&2; exit 2; }
: "${OKRA_ARGOCD:?set OKRA_ARGOCD to the directory hack/build-argocd.sh prints}"
pytest="${PYTEST:-.venv/bin/pytest}"
workers="${PYTEST_WORKERS:-3}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/okra-compat-XXXXXX")"
argocd="$(basename "$OKRA_ARGOCD" | sed -E 's/^argocd-(v[^_]+)_.*/\1/')"
rows=()
failed=0

cell() { # name kubernetes argocd pytest-args...
  local name="$1" k8s="$2" argo="$3" start status summary; shift 3
  start=$(date +%s)
  "$pytest" -n "$workers" --dist loadscope -q -p no:randomly "$@" >"$logs/$name.log" 2>&1
  status=$?
  summary="$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)' "$logs/$name.log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//')"
  [ "$status" = 0 ] || failed=1
  rows+=("| $k8s | $argo | $([ "$status" = 0 ] && echo green || echo "**red**") | ${summary:-no summary (see $logs/$name.log)} | $(( $(date +%s) - start )) s |")
  echo "compat: Kubernetes $k8s × Argo CD $argo: ${summary:-exit $status} ($logs/$name.log)" >&2
}

for minor in "$@"; do
  assets="$(hack/build-control-plane.sh "$minor")" || { failed=1; rows+=("| $minor | - | **red** | the build failed | - |"); continue; }
  version="$(basename "$assets" | sed -E 's/^k8s-(v[^_]+)_.*/\1/')"
  OKRA_ASSETS="$assets" cell "k8s-$minor" "$version" "$argocd" -m compat
  for release in ${COMPAT_ARGOCD_CRDS:-v3.4.13 v3.5.7}; do
    crds="$(hack/argocd-crds.sh "$release")" || { failed=1; continue; }
    OKRA_ASSETS="$assets" OKRA_ARGOCD_CRDS="$crds" cell "k8s-$minor-argocd-$release" "$version" \
      "$release (CRDs)" test/integration/progressiverollout
  done
done

echo
echo "| Kubernetes | Argo CD | result | tests | wall |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "run $(date -u +%Y-%m-%d) on $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); logs in $logs"
exit "$failed"
