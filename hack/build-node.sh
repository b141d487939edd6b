#!/usr/bin/env bash
# Builds what the test kit's node needs beside the control plane: kubelet, kube-scheduler,
# kube-proxy and pause (the Pod sandbox's process), with `go build` from the Go module proxy
# at the Kubernetes version pinned in hack/k8s/go.mod (the same module as the control plane,
# so the same pins), and, as root, installs the Debian packages the node runs on when they
# are missing: containerd, runc, the CNI plugins (bridge, host-local, loopback, portmap),
# iptables, conntrack, and busybox-static (the shell of the node's Job image).
#
# Cached like the control plane (hack/lib/cached-build.sh): keyed by the version, the Go
# version and a hash of the sources that build them. Prints the binary directory on stdout as
# its only output line; progress goes to stderr.
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

source "$here/lib/cached-build.sh"
command -v go >/dev/null || { echo "go is required to build the node (https://go.dev/dl/)" >&2; exit 1; }

k8s_version="$(go_mod_version k8s.io/kubernetes "$here/k8s/go.mod")"
[ -n "$k8s_version" ] || { echo "cannot read the pinned version from hack/k8s/go.mod" >&2; exit 1; }
# node-*: okra_testkit.node finds the newest complete build by this prefix
mains=("$here"/k8s/node/*/main.go)
key="node-k8s-${k8s_version}_$(go env GOVERSION)_$(files_hash "$here" build-node.sh k8s/go.mod k8s/go.sum "${mains[@]#"$here/"}")"

build() {
  local ver_pkg=k8s.io/component-base/version minor="${k8s_version#v1.}"
  minor="${minor%%.*}"
  echo "building kubelet, kube-scheduler, kube-proxy $k8s_version (about a minute with the Go cache the control plane's build left)" >&2
  (cd "$here/k8s" && go build -ldflags "-s -w -X $ver_pkg.gitVersion=$k8s_version -X $ver_pkg.gitMajor=1 \
    -X $ver_pkg.gitMinor=$minor -X $ver_pkg.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version" \
    -o "$1/" ./node/...)
}

cached_build "$key" build kubelet kube-scheduler kube-proxy pause
