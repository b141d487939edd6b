#!/usr/bin/env bash
# `make image`: builds okra-manager's image from the Dockerfile and prints its name.
#
# With buildah (Debian: `apt-get install buildah mmdebstrap`), no daemon needed: the base is
# $OKRA_IMAGE_BASE if set, else a Debian bookworm base with Python 3.11 built here with
# mmdebstrap from Debian's archive (no other registry needed), cached in buildah's storage
# under a tag keyed by what it contains. Build steps run with chroot isolation (no OCI runtime,
# no cgroups needed); the host's CA bundle is passed as a build secret so pip works behind a
# TLS-intercepting proxy. Without buildah, `docker build` with the Dockerfile's default base
# (python:3.11-slim).
#
#   OKRA_IMAGE   image name to tag (default localhost/okra-manager:dev)
#   OKRA_IMAGE_BASE   base image (default: the local Debian base; python:3.11-slim for docker)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

image="${OKRA_IMAGE:-localhost/okra-manager:dev}"
ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"

if ! command -v buildah >/dev/null; then
  command -v docker >/dev/null || {
    echo "make image needs buildah (apt-get install buildah mmdebstrap) or docker" >&2; exit 1; }
  docker build ${OKRA_IMAGE_BASE:+--build-arg "BASE=$OKRA_IMAGE_BASE"} -t "$image" . >&2
  echo "$image"; exit 0
fi

debian_base() { # builds (once) and prints a Debian base with Python 3.11 and venv
  local suite=bookworm packages=python3,python3-venv,ca-certificates
  local key tag tmp
  key="$(printf '%s %s %s' "$suite" "$packages" "$(sed -n '/^debian_base()/,/^}/p' "$0")" | sha256sum | cut -c1-12)"
  tag="localhost/okra-debian-base:$suite-$key"
  if buildah inspect --type image "$tag" >/dev/null 2>&1; then echo "$tag"; return; fi
  command -v mmdebstrap >/dev/null || { echo "the Debian base needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
  tmp="$(mktemp -d)"
  echo "building the Debian $suite base with mmdebstrap (about 2 minutes)" >&2
  mmdebstrap --quiet --variant=minbase --include="$packages" \
    --aptopt='Acquire::Languages "none"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    "$suite" "$tmp/base.tar" http://deb.debian.org/debian >&2
  local ctr
  ctr="$(buildah from scratch)"
  buildah add --quiet "$ctr" "$tmp/base.tar" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/sh "$ctr"
  buildah commit --quiet "$ctr" "$tag" >/dev/null
  buildah rm "$ctr" >/dev/null
  rm -rf "$tmp"
  echo "$tag"
}

base="${OKRA_IMAGE_BASE:-$(debian_base)}"
start=$(date +%s)
secret=()
[ -s "$ca" ] && secret=(--secret "id=pip-ca,src=$ca")
buildah bud --quiet --layers --isolation chroot --network host "${secret[@]}" \
  --build-arg "BASE=$base" -t "$image" . >&2
echo "built $image on $base in $(( $(date +%s) - start ))s; size $(buildah images --format '{{.Size}}' "$image")" >&2
echo "$image"
