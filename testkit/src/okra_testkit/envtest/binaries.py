"""Locate the control-plane binaries built by `hack/build-control-plane.sh`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ASSETS_ENV = "OKRA_ASSETS"
_NAMES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kubectl: Path


def cached_assets() -> Path | None:
    """The newest complete build in the cache `hack/build-control-plane.sh` fills."""
    return cached_build(_NAMES)


def cached_build(names: Sequence[str], pattern: str = "*") -> Path | None:
    """The newest directory matching `pattern` in okra's binary cache (where the `hack/build-*`
    scripts put their builds) that has every one of `names`."""
    root = Path(
        os.environ.get("OKRA_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "okra"
    )
    builds = [
        d
        for d in (root / "bin").glob(pattern)
        if d.is_dir() and all(os.access(d / n, os.X_OK) for n in names)
    ]
    return max(builds, key=lambda d: d.stat().st_mtime) if builds else None


def find_binaries(assets: str | os.PathLike[str] | None = None) -> Binaries:
    """Find the four binaries in `assets`, then `$OKRA_ASSETS`, then `PATH`, then the
    newest build in okra's cache directory.

    Raises FileNotFoundError naming what is missing and how to build it.
    """
    directory = assets if assets is not None else os.environ.get(ASSETS_ENV)
    if directory is None and not all(shutil.which(n) for n in _NAMES):
        cached = cached_assets()
        directory = str(cached) if cached else None
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in _NAMES:
        path: str | None
        if directory:
            candidate = Path(directory) / name
            path = str(candidate) if os.access(candidate, os.X_OK) else None
        else:
            path = shutil.which(name)
        if path is None:
            missing.append(name)
        else:
            found[name] = Path(path)
    if missing:
        where = f"{ASSETS_ENV}={directory}" if directory else "PATH"
        raise FileNotFoundError(
            f"control-plane binaries not found in {where}: {', '.join(missing)}; "
            f"build them with `hack/build-control-plane.sh` and set {ASSETS_ENV} "
            "to the directory it prints"
        )
    return Binaries(
        etcd=found["etcd"],
        kube_apiserver=found["kube-apiserver"],
        kube_controller_manager=found["kube-controller-manager"],
        kubectl=found["kubectl"],
    )
