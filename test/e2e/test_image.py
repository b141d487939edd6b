"""The image's okra-manager rolls out a Cell: run from the image's own filesystem and
entrypoint, as the image's user, on a read-only root, against the real control plane and moto.

No container engine runs here: the image (`make image`, or `$OKRA_IMAGE`) is written out as an
OCI layout (`buildah push`) and unpacked (`umoci unpack`) into a root filesystem and the
runtime config the image declares (entrypoint, user, environment). The manager then runs as a
pod with host networking would: in its own mount namespace, the root filesystem bind-mounted
read-only, a tmpfs on /tmp (the Deployment's emptyDir), chroot'ed, as the image's numeric
user. This needs root, buildah and umoci; it is the `image` suite (`make test-image`), not part
of `make test`.

It also checks what the image must not hold: a compiler, pip, the test harness (the
okra-testkit distribution and its dependencies: moto, cryptography).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.manager import EMULATOR_ENV
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.controlplane import kubeconfig_dict

from .conftest import Env, OkraManager, cell_obj, cell_status, wait_status

pytestmark = pytest.mark.image
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def image_bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An unpacked OCI bundle of the image: `rootfs/` and `config.json`."""
    for tool in ("buildah", "umoci", "unshare", "chroot"):
        assert shutil.which(tool), f"the image suite needs {tool} (apt-get install buildah umoci)"
    assert os.geteuid() == 0, "the image suite runs the image's filesystem as root (chroot)"
    image = (
        os.environ.get("OKRA_IMAGE")
        or subprocess.run(
            [str(REPO / "hack" / "image.sh")], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    work = tmp_path_factory.mktemp("image")
    subprocess.run(
        ["buildah", "push", "--quiet", "--disable-compression", image, f"oci:{work / 'oci'}:okra"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["umoci", "unpack", "--image", f"{work / 'oci'}:okra", str(work / "bundle")],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(work / "oci")
    yield work / "bundle"
    shutil.rmtree(work, ignore_errors=True)


def _config(bundle: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((bundle / "config.json").read_text())
    return config


# The mount namespace keeps every mount private to this one process tree; `exec` all the way
# down, so the pid Popen knows is the manager's and a signal reaches it directly.
_RUN = r"""
set -e
root="$1"; shared="$2"; spec="$3"; shift 3
mkdir -p "$root/tmp" "$root/proc" "$root/dev" "$root/run/okra"
mount --bind "$root" "$root"
mount --bind -o ro "$shared" "$root/run/okra"
mount -o remount,bind,ro "$root"
mount -t tmpfs -o size=64m,mode=1777 tmpfs "$root/tmp"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
exec chroot --userspec="$spec" "$root" "$@"
"""


class ImageManager(OkraManager):
    """okra-manager from the image: its entrypoint, user and environment, read-only root."""

    bundle: Path

    def start(self) -> None:
        config = _config(self.bundle)
        process = config["process"]
        user = process["user"]
        shared = self.log.parent / "shared"
        shared.mkdir(exist_ok=True)
        shared.chmod(0o755)  # the image's user reads the kubeconfig through this mount
        kubeconfig = kubeconfig_dict(
            "mgmt", self.cp.server, self.cp.ca_pem, "admin", self.cp.token()
        )
        (shared / "kubeconfig").write_text(json.dumps(kubeconfig))
        (shared / "kubeconfig").chmod(0o644)
        # its flags, without `python -m okra_controllers.manager`: the image's entrypoint runs
        flags = self.command("/run/okra/kubeconfig")[3:]
        argv = [
            "unshare",
            "--mount",
            "--",
            "/bin/sh",
            "-c",
            _RUN,
            "run-image",
            str(self.bundle / "rootfs"),
            str(shared),
            f"{user['uid']}:{user['gid']}",
            *process["args"],
            *flags,
        ]
        env = dict(e.split("=", 1) for e in process.get("env", []))
        env.update(EMULATOR_ENV)
        env["OKRA_TEST_RUN"] = os.environ.get("OKRA_TEST_RUN", "")
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)


def test_the_image_declares_a_non_root_entrypoint(image_bundle: Path) -> None:
    process = _config(image_bundle)["process"]
    assert process["user"]["uid"] == 65532
    assert process["user"]["gid"] == 65532
    assert process["args"][0] == "/opt/okra/bin/okra-manager"


def test_the_image_holds_no_compiler_pip_or_test_harness(image_bundle: Path) -> None:
    root = image_bundle / "rootfs"
    site = next((root / "opt/okra/lib").glob("python3*/site-packages"))
    present = [
        str(p.relative_to(root))
        for p in (
            *[root / "usr/bin" / c for c in ("gcc", "cc", "c++", "make", "ld")],
            root / "opt/okra/bin/pip",
            site / "pip",
        )
        if p.exists()
    ]
    assert not present, f"the image should not hold {present}"
    assert (site / "okra_controllers/manager.py").is_file()


_INSPECT = """
import importlib.metadata as md, importlib.util, json
print(json.dumps({
    "modules": {m: importlib.util.find_spec(m) is not None
                for m in ("okra_controllers", "okra_testkit", "moto", "cryptography", "pytest")},
    "dists": sorted(d.metadata["Name"].lower() for d in md.distributions()),
    "okra_files": [str(f) for f in md.files("okra") or []],
}))
"""


def test_the_image_cannot_import_the_test_harness(image_bundle: Path, tmp_path: Path) -> None:
    """The harness is another distribution (okra-testkit) with its own dependencies: the
    image's Python, as the image's user, finds none of it, and okra's own files hold none."""
    process = _config(image_bundle)["process"]
    user = process["user"]
    out = subprocess.run(
        [
            "unshare",
            "--mount",
            "--",
            "/bin/sh",
            "-c",
            _RUN,
            "inspect-image",
            str(image_bundle / "rootfs"),
            str(tmp_path),
            f"{user['uid']}:{user['gid']}",
            "/opt/okra/bin/python",
            "-c",
            _INSPECT,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=dict(e.split("=", 1) for e in process.get("env", [])),
    )
    seen = json.loads(out.stdout)
    assert seen["modules"] == {
        "okra_controllers": True,
        "okra_testkit": False,
        "moto": False,
        "cryptography": False,
        "pytest": False,
    }
    assert "okra" in seen["dists"]
    harness = {"okra-testkit", "moto", "cryptography", "pytest", "pip"} & set(seen["dists"])
    assert not harness, f"the image should not have {sorted(harness)} installed"
    assert seen["okra_files"], "okra's installed file list (RECORD) is empty"
    assert not [f for f in seen["okra_files"] if "testkit" in f or "envtest" in f]


@pytest.fixture
def image_okra(
    control_plane: ControlPlane, env: Env, tmp_path: Path, image_bundle: Path
) -> Iterator[ImageManager]:
    m = ImageManager(control_plane, env, tmp_path / "okra-manager.log")
    m.bundle = image_bundle
    m.start()
    yield m
    m.stop()


async def test_the_image_rolls_out_a_cell(
    env: Env, image_okra: ImageManager, rt_client: Client, namespace: str
) -> None:
    from .test_cell_canary import weights_match_plan

    await env.target_group("web-a-v1", "v1")
    steps: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {"duration": "1s"}}]
    await rt_client.create(cell_obj(namespace, env.alb.listener_arn, steps))
    st = await wait_status(rt_client, namespace, lambda s: s.get("health") == "Healthy")
    assert await env.rule_weights() == {"web-a-v1": 100}

    await env.target_group("web-a-v2", "v2")
    st = await wait_status(
        rt_client,
        namespace,
        lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy",
    )
    await weights_match_plan(env, st)
    assert await env.rule_weights() == {"web-a-v2": 100}
    assert (await cell_status(rt_client, namespace)).get("stableVersion") == "v2"
    assert image_okra.proc is not None
    assert image_okra.proc.poll() is None, "the manager exited"
    assert _uid(image_okra.proc.pid) == 65532, "the manager runs as the image's user"


def _uid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
