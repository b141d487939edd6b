#!/usr/bin/env bash
# Builds the real Kubernetes control plane used by okra's tests and demo:
# kube-apiserver, kube-controller-manager, kubectl (with kustomize) and etcd,
# with `go build` from the Go module proxy at the versions pinned in
# hack/k8s/go.mod and hack/etcd/go.mod.
#
# Another Kubernetes minor: `hack/build-control-plane.sh 1.32` (or OKRA_K8S_MINOR=1.32) builds
# the same sources against hack/k8s/go.1.32.mod (written by hack/k8s/pin.sh), with the same
# etcd (the API server speaks etcd's v3 API, the same in each). The minors pinned are those
# of docs/compatibility.md; without one, hack/k8s/go.mod's (the default) is built.
#
# The binaries are cached under the user's cache directory, keyed by the
# versions and a hash of the Go sources that build them, so a second run is
# instant. Safe to run twice at once (flock). Prints the binary directory on
# stdout as its only output line; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pinned() { # module go.mod -> the version go.mod requires (one-line or block form)
  sed -nE "s#^(require)?[[:space:]]*$1 (v[^ ]+).*#\2#p" "$2" | head -n 1
}
minor_wanted="${1:-${OKRA_K8S_MINOR:-}}"
modfile=go.mod
if [ -n "$minor_wanted" ] && [ -f "$here/k8s/go.$minor_wanted.mod" ]; then
  modfile="go.$minor_wanted.mod"
elif [ -n "$minor_wanted" ] && [[ "$(pinned k8s.io/kubernetes "$here/k8s/go.mod")" != "v$minor_wanted".* ]]; then
  echo "no Kubernetes $minor_wanted pinned: the minors are $(cd "$here/k8s" && ls go.*.mod | sed -E 's/go\.(.*)\.mod/\1/' | tr '\n' ' ')and the default's (hack/k8s/go.mod)" >&2
  exit 2
fi
sumfile="${modfile%.mod}.sum"
k8s_version="$(pinned k8s.io/kubernetes "$here/k8s/$modfile")"
etcd_version="$(pinned go.etcd.io/etcd/server/v3 "$here/etcd/go.mod")"
[ -n "$k8s_version" ] && [ -n "$etcd_version" ] || { echo "cannot read pinned versions from hack/*/go.mod" >&2; exit 1; }

command -v go >/dev/null || { echo "go is required to build the control plane (https://go.dev/dl/)" >&2; exit 1; }
go_version="$(go env GOVERSION)"
src_hash="$(cd "$here" && cat build-control-plane.sh "k8s/$modfile" "k8s/$sumfile" etcd/go.mod etcd/go.sum \
  k8s/cmd/*/main.go etcd/main.go | sha256sum | cut -c1-12)"
cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"
key="k8s-${k8s_version}_etcd-${etcd_version}_${go_version}_${src_hash}"
out="$cache_root/bin/$key"
bins=(kube-apiserver kube-controller-manager kubectl etcd)

complete() { for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done; }

if complete; then echo "$out"; exit 0; fi

mkdir -p "$cache_root/bin"
exec 9>"$cache_root/bin/.lock"
echo "waiting for the build lock $cache_root/bin/.lock" >&2
flock 9
if complete; then echo "$out"; exit 0; fi

tmp="$(mktemp -d "$cache_root/bin/.build-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
ver_pkg=k8s.io/component-base/version
minor="${k8s_version#v1.}"; minor="${minor%%.*}"
ldflags="-s -w -X $ver_pkg.gitVersion=$k8s_version -X $ver_pkg.gitMajor=1 -X $ver_pkg.gitMinor=$minor \
 -X $ver_pkg.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
echo "building kube-apiserver, kube-controller-manager, kubectl $k8s_version (a cold build takes about 6 minutes on 2 cores)" >&2
(cd "$here/k8s" && go build -modfile="$modfile" -ldflags "$ldflags" -o "$tmp/" ./cmd/...)
echo "building etcd $etcd_version" >&2
(cd "$here/etcd" && go build -ldflags "-s -w" -o "$tmp/etcd" .)
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
