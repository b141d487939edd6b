#!/usr/bin/env bash
# bench/runtime: pushes BENCH_COUNT (default 10,000) ConfigMaps through
# informer -> workqueue -> no-op reconcile for okra_runtime, kopf and a minimal
# controller-runtime (Go) controller, on one fresh local control plane, and
# prints a table (and bench/runtime/results.json). See bench/README.md.
#
# Installs what it needs on first use and is idempotent: the project venv
# (make venv), the control-plane binaries (hack/build-control-plane.sh, cached),
# okra installed as its image installs it in bench/.venv-okra, a kopf venv in
# bench/.venv-kopf from bench/requirements.txt, and the Go
# controller (go build from the module proxy, cached under
# ${XDG_CACHE_HOME:-~/.cache}/okra/bench/). Arguments go to run.py
# (--impls okra,kopf,controller-runtime  --count N); --prepare installs and exits.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bench="$root/bench"
cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"

# 1. The project venv (okra_runtime, kubernetes_asyncio) and the control plane.
make -s -C "$root" venv >&2
py="$root/.venv/bin/python"
OKRA_ASSETS="$("$root/hack/build-control-plane.sh")"
export OKRA_ASSETS

# 1b. okra as its image installs it, in bench/.venv-okra: the pinned runtime dependencies
# (requirements.lock, hashes checked) and okra itself built from this tree, byte-compiled,
# without the dev tools of the project venv. The project venv would time what no installed
# okra pays: its editable src/ compiled again at every start wherever PYTHONDONTWRITEBYTECODE
# is set, and rich, which structlog imports when it is present.
base_python="$("$py" -c 'import sys; print(sys._base_executable)')"
okra_venv="$bench/.venv-okra"
okra_key="$( (cat "$root/requirements.lock" "$root/pyproject.toml"; echo "$base_python";
  cd "$root" && find src -name '*.py' -print0 | sort -z | xargs -0 cat) | sha256sum | cut -c1-12)"
if [ ! -f "$okra_venv/.installed-$okra_key" ]; then
  echo "installing okra into $okra_venv (as the image does)" >&2
  rm -rf "$okra_venv"
  "$base_python" -m venv "$okra_venv"
  "$okra_venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -r "$root/requirements.lock"
  "$okra_venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$root"
  "$okra_venv/bin/python" -m compileall -q "$okra_venv" >/dev/null
  touch "$okra_venv/.installed-$okra_key"
fi

# 2. kopf in a venv of its own, on the same CPython as the project venv.
kopf_venv="$bench/.venv-kopf"
kopf_key="$( (cat "$bench/requirements.txt"; echo "$base_python") | sha256sum | cut -c1-12)"
if [ ! -f "$kopf_venv/.installed-$kopf_key" ]; then
  echo "installing kopf into $kopf_venv" >&2
  rm -rf "$kopf_venv"
  "$base_python" -m venv "$kopf_venv"
  "$kopf_venv/bin/pip" install --quiet --disable-pip-version-check -r "$bench/requirements.txt"
  touch "$kopf_venv/.installed-$kopf_key"
fi

# 3. The controller-runtime controller, keyed by its sources and the Go version.
command -v go >/dev/null || { echo "go is required to build the controller-runtime anchor" >&2; exit 1; }
cr_src="$here/controller-runtime"
cr_key="$(go env GOVERSION)_$(cat "$cr_src/go.mod" "$cr_src/go.sum" "$cr_src/main.go" | sha256sum | cut -c1-12)"
cr_bin="$cache_root/bench/controller-runtime-$cr_key"
if [ ! -x "$cr_bin" ]; then
  mkdir -p "$cache_root/bench"
  exec 9>"$cache_root/bench/.lock"
  flock 9
  if [ ! -x "$cr_bin" ]; then
    echo "building the controller-runtime controller (go build, once)" >&2
    (cd "$cr_src" && go build -buildvcs=false -o "$cr_bin.tmp" .)
    mv "$cr_bin.tmp" "$cr_bin"
  fi
  exec 9>&-
fi

if [ "${1:-}" = "--prepare" ]; then
  echo "ready: OKRA_ASSETS=$OKRA_ASSETS kopf=$kopf_venv controller-runtime=$cr_bin" >&2
  exit 0
fi

exec "$py" "$here/run.py" --okra-python "$okra_venv/bin/python" --kopf-python "$kopf_venv/bin/python" --controller-runtime "$cr_bin" "$@"
