# Sourced by hack/ scripts that build a pinned tool once and cache it under the user's cache
# directory (keyed by versions and a hash of the files that define the build), so a second run
# is instant and two runs at once build once (flock). Progress goes to stderr; the calling
# script prints the one result line on stdout.
#
#   source "$here/lib/cached-build.sh"
#   v="$(go_mod_version helm.sh/helm/v3 "$here/helm/go.mod")"
#   key="helm-${v}_$(go env GOVERSION)_$(files_hash "$here" build-helm.sh helm/go.mod helm/go.sum)"
#   build() { go build -o "$1/helm" ...; }     # $1: an empty directory to fill
#   out="$(cached_build "$key" build helm)"   # the cache directory holding ./helm

cache_root="${OKRA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/okra}"

go_mod_version() { # module go.mod -> the version go.mod requires (one-line or block form)
  sed -nE "s#^(require)?[[:space:]]*$1 (v[^ ]+).*#\2#p" "$2" | head -n 1
}

files_hash() { # dir file... -> 12 hex digits of the files' contents (the lib itself included)
  local dir="$1"; shift
  (cd "$dir" && cat "$@" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)
}

cached_build() { # key build-function binary... -> prints the directory holding the binaries
  local key="$1" fn="$2"; shift 2
  local out="$cache_root/bin/$key" b
  _complete() { for b in "$@"; do [ -x "$out/$b" ] || return 1; done; }
  if _complete "$@"; then echo "$out"; return 0; fi
  mkdir -p "$cache_root/bin"
  exec 9>"$cache_root/bin/.lock-$key"
  echo "waiting for the build lock $cache_root/bin/.lock-$key" >&2
  flock 9
  if _complete "$@"; then exec 9>&-; echo "$out"; return 0; fi
  local tmp start
  tmp="$(mktemp -d "$cache_root/bin/.build-XXXXXX")"
  start=$(date +%s)
  if ! "$fn" "$tmp"; then rm -rf "$tmp"; exec 9>&-; return 1; fi
  for b in "$@"; do
    [ -x "$tmp/$b" ] || { echo "the build made no $b" >&2; rm -rf "$tmp"; exec 9>&-; return 1; }
  done
  rm -rf "$out"
  mv "$tmp" "$out"
  exec 9>&-
  rm -f "$cache_root/bin/.lock-$key"
  echo "built $* in $(( $(date +%s) - start ))s" >&2
  echo "$out"
}
