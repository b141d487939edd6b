#!/usr/bin/env bash
# Builds `exprlang` (test/expr_differential/exprlang: Argo Rollouts' EvalCondition on
# github.com/expr-lang/expr at the version pinned in its go.mod) with `go build` from the Go
# module proxy, cached like the control plane (hack/lib/cached-build.sh). The expr differential
# test feeds it conditions and compares its verdicts with okra's evaluator. Prints the path of
# the binary on stdout as its only output line; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/../test/expr_differential/exprlang"
source "$here/lib/cached-build.sh"
command -v go >/dev/null || { echo "go is required to build exprlang (https://go.dev/dl/)" >&2; exit 1; }

version="$(go_mod_version github.com/expr-lang/expr "$src/go.mod")"
[ -n "$version" ] || { echo "cannot read expr's pinned version from $src/go.mod" >&2; exit 1; }
key="exprlang-${version}_$(go env GOVERSION)_$(files_hash "$here" build-exprlang.sh ../test/expr_differential/exprlang/go.mod ../test/expr_differential/exprlang/go.sum ../test/expr_differential/exprlang/main.go)"

build() {
  echo "building exprlang on expr $version (about 15 s)" >&2
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$1/exprlang" .)
}

out="$(cached_build "$key" build exprlang)"
echo "$out/exprlang"
