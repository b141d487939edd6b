#!/usr/bin/env bash
# Pins a Kubernetes minor for hack/build-control-plane.sh: `hack/k8s/pin.sh v1.32.9` writes
# go.1.32.mod and go.1.32.sum beside go.mod (the default minor's), for `go build
# -modfile=go.1.32.mod` over the same cmd/ sources. Each of Kubernetes' staging modules
# (k8s.io/api, client-go, ...) is pinned to the same patch as k8s.io/kubernetes, read from its
# own go.mod (its `=> ./staging/...` replace lines, which do not apply to a module that
# requires it), and its go and godebug lines are kept. Choose a patch the module proxy serves
# every staging module of (docs/compatibility.md says which were chosen and why).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:?usage: $0 v1.MINOR.PATCH}"
[[ "$version" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "not a Kubernetes version: $version" >&2; exit 2; }
minor="1.${BASH_REMATCH[1]}"
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
cd "$here"
upstream="$(cd / && go mod download -json "k8s.io/kubernetes@$version" | sed -nE 's/^\s*"GoMod": "(.*)",?$/\1/p')"
[ -f "$upstream" ] || { echo "the module proxy has no k8s.io/kubernetes $version" >&2; exit 1; }
out="go.$minor.mod"
{
  echo "// Kubernetes $minor for hack/build-control-plane.sh; written by hack/k8s/pin.sh $version"
  echo "module okra.invalid/hack/k8s"
  echo
  grep -E '^go [0-9.]+$' "$upstream"
  echo
  grep -E '^godebug ' "$upstream" || true
  echo
  echo "require ("
  echo "	k8s.io/component-base $staging"
  echo "	k8s.io/kubectl v0.0.0"
  echo "	k8s.io/kubernetes $version"
  echo ")"
  echo
  echo "replace ("
  sed -nE 's#^\s*(k8s\.io/[a-z0-9-]+) => \./staging/.*#\1#p' "$upstream" | sort -u |
    while read -r m; do echo "	$m => $m $staging"; done
  echo ")"
} >"$out"
: >"go.$minor.sum"
go mod tidy -modfile="$out"
echo "wrote hack/k8s/$out and go.$minor.sum" >&2
