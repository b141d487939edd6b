#!/usr/bin/env bash
# Fetches one Argo CD release's CRDs (Application, ApplicationSet, AppProject) from its module
# on the Go module proxy (manifests/crds/ is in the module zip), for the matrix's cells where
# that Argo CD's controller cannot be built here (docs/compatibility.md says why): okra's own
# reads and writes of Applications and AppProjects then run against that release's schemas.
#
#   hack/argocd-crds.sh v3.4.13      # prints the directory holding the three CRDs
#
# Cached under the user's cache directory by version. Progress goes to stderr.
set -euo pipefail
version="${1:?usage: $0 v3.MINOR.PATCH}"
[[ "$version" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { echo "not an Argo CD 3 version: $version" >&2; exit 2; }
cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"
out="$cache_root/argocd-crds/$version"
crds=(application-crd.yaml applicationset-crd.yaml appproject-crd.yaml)
complete() { for c in "${crds[@]}"; do [ -s "$out/$c" ] || return 1; done; }
if complete; then echo "$out"; exit 0; fi
command -v go >/dev/null || { echo "go is required to fetch Argo CD's module (https://go.dev/dl/)" >&2; exit 1; }
echo "fetching Argo CD $version's module for its CRDs" >&2
# The zip, not the module's directory: `go mod download` extracts a module only when this Go
# can build it (Argo CD 3.6 needs Go 1.27; it then exits 1 with the zip downloaded), and the
# CRDs are plain files in the zip either way.
zip="$( (cd / && GOFLAGS=-mod=mod go mod download -json "github.com/argoproj/argo-cd/v3@$version" || true) |
  sed -nE 's/^\s*"Zip": "(.*)",?$/\1/p')"
[ -s "$zip" ] || { echo "the module proxy has no Argo CD $version" >&2; exit 1; }
mkdir -p "$cache_root/argocd-crds"
tmp="$(mktemp -d "$cache_root/argocd-crds/.fetch-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
python3 - "$zip" "github.com/argoproj/argo-cd/v3@$version/manifests/crds" "$tmp" "${crds[@]}" <<'PY'
import sys, zipfile
zip_path, prefix, out, *names = sys.argv[1:]
with zipfile.ZipFile(zip_path) as z:
    for name in names:
        with open(f"{out}/{name}", "wb") as f:
            f.write(z.read(f"{prefix}/{name}"))
PY
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
