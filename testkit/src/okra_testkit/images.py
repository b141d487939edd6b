"""Container images as OCI archives for a node that reaches no registry (`okra_testkit.node`):
written here (`oci_archive`: the Pod sandbox's pause image, a busybox image) or exported from
buildah (`buildah_archive`), then imported into containerd and run with
`imagePullPolicy: Never`.

Synchronous, like the rest of the node harness.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from okra_testkit.hoststate import NodeUnavailableError

PAUSE_IMAGE = "localhost/okra-pause:1"
BUSYBOX_IMAGE = "localhost/okra-busybox:1"


def oci_archive(
    path: Path,
    name: str,
    files: Mapping[str, bytes | Path],
    *,
    symlinks: Mapping[str, str] | None = None,
    entrypoint: Sequence[str] = (),
    cmd: Sequence[str] = (),
    user: str = "",
) -> Path:
    """Write a one-layer OCI image archive named `name` (what `ctr images import` reads):
    `files` (image path -> contents or a host file, executable) and `symlinks`."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(p).parent) for p in [*files, *(symlinks or {})]} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for image_path, content in sorted(files.items()):
            data = content.read_bytes() if isinstance(content, Path) else content
            info = tarfile.TarInfo(image_path)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        for link, target in sorted((symlinks or {}).items()):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    layer_bytes = layer.getvalue()
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> tuple[str, int]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest, len(data)

    layer_digest, layer_size = blob(layer_bytes)
    config: dict[str, object] = {"Env": ["PATH=/bin"]}
    if entrypoint:
        config["Entrypoint"] = list(entrypoint)
    if cmd:
        config["Cmd"] = list(cmd)
    if user:
        config["User"] = user
    config_digest, config_size = blob(
        json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": config,
                "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
            }
        ).encode()
    )
    manifest_digest, manifest_size = blob(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": config_digest,
                    "size": config_size,
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest,
                        "size": layer_size,
                    }
                ],
            }
        ).encode()
    )
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": manifest_size,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
                },
            }
        ],
    }
    with tarfile.open(path, "w") as out:
        entries = {
            "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
            "index.json": json.dumps(index).encode(),
            **{f"blobs/sha256/{d.split(':', 1)[1]}": b for d, b in blobs.items()},
        }
        for entry, data in entries.items():
            info = tarfile.TarInfo(entry)
            info.size, info.mode = len(data), 0o644
            out.addfile(info, io.BytesIO(data))
    return path


def busybox_archive(path: Path, name: str = BUSYBOX_IMAGE) -> Path:
    """An image of Debian's busybox-static (`/bin/sh` and its applets): for Jobs and small
    Pods in tests."""
    busybox = Path("/bin/busybox")
    if not busybox.exists():
        raise NodeUnavailableError(
            "busybox-static is not installed (apt-get install busybox-static)"
        )
    applets = ("sh", "echo", "cat", "sleep", "wget", "nc", "httpd", "hostname", "mkdir", "env")
    return oci_archive(
        path,
        name,
        {"bin/busybox": busybox},
        symlinks={f"bin/{a}": "busybox" for a in applets},
        cmd=["sh"],
    )


def buildah_archive(image: str, path: Path) -> Path:
    """`image` from buildah's storage as a docker-archive `import_image` loads, by its name."""
    subprocess.run(
        ["buildah", "push", "--quiet", image, f"docker-archive:{path}:{image}"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return path
