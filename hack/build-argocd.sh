#!/usr/bin/env bash
# Builds the real Argo CD used by okra's end-to-end tests and fleet demo: one `argocd` binary
# (it serves every component, chosen by ARGOCD_BINARY_NAME or the name it is run as), with
# `go build` from the Go module proxy at the version pinned in hack/argocd/go.mod. That wrapper
# module carries the `replace` lines argo-cd's own go.mod needs (a dependency's replace lines
# do not apply), minus its `./gitops-engine` one: the published gitops-engine module resolves.
# Its go directive (1.27) makes `go` fetch that toolchain from the module proxy by itself.
#
# Beside the binary: Argo CD's CRDs (Application, ApplicationSet, AppProject) from the same
# module's manifests/crds/ in crds/, and in bin/ the helper scripts its image puts beside the
# binary (hack/git-verify-wrapper.sh, hack/gpg-wrapper.sh: repo-server runs them for every
# revision). Cached like the control plane (hack/lib/cached-build.sh). Prints the directory
# (argocd, crds/, bin/) on stdout as its only output line; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib/cached-build.sh"
command -v go >/dev/null || { echo "go is required to build Argo CD (https://go.dev/dl/)" >&2; exit 1; }
mod="$here/argocd"
# At least the toolchain the go directive asks for: `go` downloads it from the module proxy when
# the installed one is older (even where GOTOOLCHAIN=local is the default).
export GOTOOLCHAIN="go$(sed -nE 's/^go ([0-9.]+)$/\1/p' "$mod/go.mod")+auto"

version="$(go_mod_version github.com/argoproj/argo-cd/v3 "$mod/go.mod")"
[ -n "$version" ] || { echo "cannot read the pinned Argo CD version from $mod/go.mod" >&2; exit 1; }
key="argocd-${version}_$(cd "$mod" && go env GOVERSION)_$(files_hash "$here" build-argocd.sh argocd/go.mod argocd/go.sum argocd/tools.go)"

build() {
  local v="${version#v}" pkg=github.com/argoproj/argo-cd/v3/common kubectl src
  kubectl="$(sed -nE 's#^[[:space:]]*k8s.io/kubectl => k8s.io/kubectl (v[^ ]+).*#\1#p' "$mod/go.mod")"
  echo "building argocd $version (a cold build takes 5 to 16 minutes on 2 cores)" >&2
  (cd "$mod" && go build -trimpath -ldflags "-s -w -X $pkg.version=$v -X $pkg.gitTag=$version \
    -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z -X $pkg.kubectlVersion=$kubectl" \
    -o "$1/argocd" github.com/argoproj/argo-cd/v3/cmd)
  src="$(cd "$mod" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)"
  mkdir -p "$1/crds" "$1/bin"
  cp "$src"/manifests/crds/application-crd.yaml "$src"/manifests/crds/applicationset-crd.yaml \
    "$src"/manifests/crds/appproject-crd.yaml "$1/crds/"
  cp "$src"/hack/git-verify-wrapper.sh "$src"/hack/gpg-wrapper.sh "$1/bin/"
  chmod u+w "$1"/crds/* "$1"/bin/*
  chmod +x "$1"/bin/*
}

cached_build "$key" build argocd bin/git-verify-wrapper.sh bin/gpg-wrapper.sh
