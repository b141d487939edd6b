#!/usr/bin/env bash
# Copies the generated CRDs (config/crd/bases), RBAC roles and actor policy (config/rbac) into
# the Helm chart (charts/okra/crds, charts/okra/files), so the chart cannot drift from
# `kubectl apply -k config/default`. With --check nothing is written and the exit status is 1
# if the chart's copies differ (`make lint` runs it so).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=false
[ "${1:-}" = "--check" ] && check=true
pairs=()
for f in config/crd/bases/*.yaml; do pairs+=("$f" "charts/okra/crds/$(basename "$f")"); done
for f in role.yaml leader_election_role.yaml viewer_role.yaml editor_role.yaml cluster_freezer_role.yaml actor_policy.yaml; do pairs+=("config/rbac/$f" "charts/okra/files/$f"); done

stale=0
for ((i = 0; i < ${#pairs[@]}; i += 2)); do
  src="${pairs[i]}" dst="${pairs[i+1]}"
  if ! cmp -s "$src" "$dst"; then
    if $check; then echo "$dst differs from $src (run \`make chart\`)" >&2; stale=1
    else mkdir -p "$(dirname "$dst")"; cp "$src" "$dst"; echo "wrote $dst" >&2; fi
  fi
done
for dst in charts/okra/crds/*.yaml; do # a CRD removed from config/ leaves the chart too
  [ -e "$dst" ] || continue
  [ -e "config/crd/bases/$(basename "$dst")" ] && continue
  if $check; then echo "$dst has no source in config/crd/bases (run \`make chart\`)" >&2; stale=1
  else rm "$dst"; echo "removed $dst" >&2; fi
done
exit $stale
