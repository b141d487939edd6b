#!/usr/bin/env bash
# Builds what the test kit's node needs beside the control plane: kubelet, kube-scheduler,
# kube-proxy and pause (the Pod sandbox's process), with `go build` from the Go module proxy
# at the Kubernetes version pinned in hack/k8s/go.mod (the same module as the control plane,
# so the same pins), and, as root, installs the Debian packages the node runs on when they
# are missing: containerd, runc, the CNI plugins (bridge, host-local, loopback, portmap),
# iptables, conntrack, and busybox-static (the shell of the node's Job image).
#
# Cached like hack/build-control-plane.sh: under the user's cache directory, keyed by the
# version, the Go version and a hash of the sources that build them; safe to run twice at
# once (flock). Prints the binary directory on stdout as its only output line; progress goes
# to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Debian packages (the node runs containers as root: containerd as a plain process, runc)
packages=(containerd runc containernetworking-plugins iptables conntrack busybox-static)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} (apt-get)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
      { apt-get update -q >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
  else
    echo "the node needs Debian's ${missing[*]} (apt-get install, as root)" >&2
  fi
fi

pinned() { # module go.mod -> the version go.mod requires (one-line or block form)
  sed -nE "s#^(require)?[[:space:]]*$1 (v[^ ]+).*#\2#p" "$2" | head -n 1
}
k8s_version="$(pinned k8s.io/kubernetes "$here/k8s/go.mod")"
[ -n "$k8s_version" ] || { echo "cannot read the pinned version from hack/k8s/go.mod" >&2; exit 1; }

command -v go >/dev/null || { echo "go is required to build the node (https://go.dev/dl/)" >&2; exit 1; }
go_version="$(go env GOVERSION)"
src_hash="$(cd "$here" && cat build-node.sh k8s/go.mod k8s/go.sum k8s/node/*/main.go | sha256sum | cut -c1-12)"
cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"
key="node-k8s-${k8s_version}_${go_version}_${src_hash}"
out="$cache_root/bin/$key"
bins=(kubelet kube-scheduler kube-proxy pause)

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
echo "building kubelet, kube-scheduler, kube-proxy $k8s_version (about 2 minutes with a warm Go cache)" >&2
(cd "$here/k8s" && go build -ldflags "$ldflags" -o "$tmp/" ./node/...)
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
