#!/usr/bin/env bash
# Builds the real Argo CD used by okra's end-to-end tests and fleet demo: one `argocd` binary
# (it serves every component, chosen by ARGOCD_BINARY_NAME or the name it is run as), with
# `go build` from the Go module proxy at the version pinned in hack/argocd/go.mod. That wrapper
# module carries the `replace` lines argo-cd's own go.mod needs (a dependency's replace lines
# do not apply), minus its `./gitops-engine` one: the published gitops-engine module resolves.
# The go directive there (1.27) makes `go` fetch that toolchain from the proxy by itself.
#
# Argo CD's CRDs (Application, ApplicationSet, AppProject) are copied from the same module's
# manifests/crds/ into <out>/crds/, and the helper scripts its image puts beside the binary
# (hack/git-verify-wrapper.sh, hack/gpg-wrapper.sh: repo-server runs them for every revision)
# into <out>/bin/.
#
# Everything is cached under the user's cache directory, keyed by the version, the Go toolchain
# and a hash of the files that build it, so a second run is instant. Safe to run twice at once
# (flock). Prints the output directory (argocd, crds/, bin/) on stdout as its only output line;
# progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$here/argocd"
version="$(sed -nE 's#^(require)?[[:space:]]*github.com/argoproj/argo-cd/v3 (v[^ ]+).*#\2#p' "$mod/go.mod" | head -n 1)"
[ -n "$version" ] || { echo "cannot read the pinned Argo CD version from $mod/go.mod" >&2; exit 1; }

command -v go >/dev/null || { echo "go is required to build Argo CD (https://go.dev/dl/)" >&2; exit 1; }
# At least the toolchain the go directive asks for: `go` downloads it from the module proxy when
# the installed one is older (even where GOTOOLCHAIN=local is the default).
export GOTOOLCHAIN="go$(sed -nE 's/^go ([0-9.]+)$/\1/p' "$mod/go.mod")+auto"
go_version="$(cd "$mod" && go env GOVERSION)"
src_hash="$(cd "$here" && cat build-argocd.sh argocd/go.mod argocd/go.sum argocd/tools.go | sha256sum | cut -c1-12)"
cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"
out="$cache_root/argocd/argocd-${version}_${go_version}_${src_hash}"

complete() {
  [ -x "$out/argocd" ] && [ -f "$out/crds/application-crd.yaml" ] && [ -x "$out/bin/git-verify-wrapper.sh" ]
}

if complete; then echo "$out"; exit 0; fi

mkdir -p "$cache_root/argocd"
exec 9>"$cache_root/argocd/.lock"
echo "waiting for the build lock $cache_root/argocd/.lock" >&2
flock 9
if complete; then echo "$out"; exit 0; fi

tmp="$(mktemp -d "$cache_root/argocd/.build-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
v="${version#v}"
pkg=github.com/argoproj/argo-cd/v3/common
ldflags="-s -w -X $pkg.version=$v -X $pkg.gitTag=$version -X $pkg.gitTreeState=clean \
 -X $pkg.buildDate=1970-01-01T00:00:00Z -X $pkg.kubectlVersion=$(sed -nE 's#^[[:space:]]*k8s.io/kubectl => k8s.io/kubectl (v[^ ]+).*#\1#p' "$mod/go.mod")"
echo "building argocd $version with $go_version (a cold build takes about 5 minutes on 2 cores)" >&2
(cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$tmp/argocd" github.com/argoproj/argo-cd/v3/cmd)
src="$(cd "$mod" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)"
mkdir -p "$tmp/crds" "$tmp/bin"
cp "$src"/manifests/crds/*-crd.yaml "$tmp/crds/"
cp "$src"/hack/git-verify-wrapper.sh "$src"/hack/gpg-wrapper.sh "$tmp/bin/"
chmod u+w "$tmp"/crds/* "$tmp"/bin/*
chmod +x "$tmp"/bin/*
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
