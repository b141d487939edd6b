#!/usr/bin/env bash
# Builds `helm` (used to lint, render and install charts/okra in tests) with `go build` from the
# Go module proxy at the version pinned in hack/helm/go.mod (a `tool` directive), cached like the
# control plane (hack/lib/cached-build.sh). Prints the path of the helm binary on stdout as its
# only output line; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib/cached-build.sh"
command -v go >/dev/null || { echo "go is required to build helm (https://go.dev/dl/)" >&2; exit 1; }

version="$(go_mod_version helm.sh/helm/v3 "$here/helm/go.mod")"
[ -n "$version" ] || { echo "cannot read helm's pinned version from hack/helm/go.mod" >&2; exit 1; }
key="helm-${version}_$(go env GOVERSION)_$(files_hash "$here" build-helm.sh helm/go.mod helm/go.sum)"

build() {
  echo "building helm $version (a cold build takes 3 to 5 minutes on 2 cores)" >&2
  (cd "$here/helm" && go build -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
    -o "$1/helm" helm.sh/helm/v3/cmd/helm)
}

out="$(cached_build "$key" build helm)"
echo "$out/helm"
