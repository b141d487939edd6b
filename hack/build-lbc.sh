#!/usr/bin/env bash
# Builds the AWS Load Balancer Controller (the node suite runs it against moto, where it
# registers Pod IPs from TargetGroupBindings) with `go build` from the Go module proxy at a
# pinned version, and puts its CRDs beside it. The controller's v2 and v3 release tags are not
# Go module versions (its module path has no /vN suffix), so the pin is the proxy's
# pseudo-version of a commit: v3.2.2 and the 7 commits after it (tagging fixes for NLBs and
# Gateways). The build runs inside the module's own source (`go mod download -json`), with its
# go.mod and go.sum.
#
# Cached like the control plane (hack/lib/cached-build.sh). Prints the path of the binary on
# stdout as its only output line (its CRDs, TargetGroupBinding among them, are in `crds/`
# beside it); progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib/cached-build.sh"
command -v go >/dev/null || { echo "go is required to build the load balancer controller (https://go.dev/dl/)" >&2; exit 1; }

module=sigs.k8s.io/aws-load-balancer-controller
version=v0.0.0-20260423195125-93ff3b5fdaad
release=v3.2.2-7-g93ff3b5fd # what `git describe` says of that commit
key="lbc-${version##*-}_$(go env GOVERSION)_$(files_hash "$here" build-lbc.sh)"

build() {
  local dir
  echo "downloading $module@$version" >&2
  dir="$(cd "$1" && go mod download -json "$module@$version" | sed -nE 's/^[[:space:]]*"Dir": "(.*)",?$/\1/p')"
  [ -d "$dir" ] || { echo "go mod download gave no source directory for $module@$version" >&2; return 1; }
  echo "building the load balancer controller $release (a cold build takes about 3 minutes on 2 cores)" >&2
  (cd "$dir" && go build -trimpath -ldflags "-s -w -X $module/pkg/version.GitVersion=$release" \
    -o "$1/aws-load-balancer-controller" .) || return 1
  mkdir "$1/crds" && cp "$dir"/config/crd/bases/*.yaml "$1/crds/" && chmod -R u+w "$1/crds"
}

out="$(cached_build "$key" build aws-load-balancer-controller)"
echo "$out/aws-load-balancer-controller"
