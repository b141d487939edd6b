"""Argo CD's own EKS tokens are verified like okra's: `argocd-k8s-auth aws --cluster-name X`
(the exec credential plugin Argo CD runs for a cluster Secret with `awsAuthConfig`), from the
real `argocd` binary (`hack/build-argocd.sh`), signing with moto's keys, is accepted by the
workload apiserver for cluster X only; kubectl (client-go) runs it as an exec plugin, as Argo CD's
application-controller does; and Argo CD reads ClusterSet's Secret into exactly that."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from eks_tokens import decode, whoami
from okra_runtime import GVK, Client
from okra_testkit.eksauth import TokenReviewServer
from okra_testkit.emulator import EMULATOR_ARN
from okra_testkit.envtest import ControlPlane, find_binaries
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import Seeder
from support import eventually

SECRET = GVK("", "v1", "Secret")


def argocd_binary() -> Path:
    """`argocd` from `$OKRA_ARGOCD` (the directory hack/build-argocd.sh prints) or the newest
    build in okra's cache; the test is skipped, saying so, when Argo CD was not built."""
    where = os.environ.get("OKRA_ARGOCD")
    if where:
        return Path(where) / "argocd"
    root = Path(
        os.environ.get("OKRA_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "okra"
    )
    builds = sorted(root.glob("argocd/argocd-*/argocd"), key=lambda p: p.stat().st_mtime)
    if not builds:
        pytest.skip("Argo CD is not built: run hack/build-argocd.sh (or set OKRA_ARGOCD)")
    return builds[-1]


def aws_env(eks: LocalEks, endpoint: bool = True) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/"),
        "ARGOCD_BINARY_NAME": "argocd-k8s-auth",
        **eks.aws_env(),
    }
    if not endpoint:
        del env["AWS_ENDPOINT_URL"]
    return env


async def run(argv: list[str], env: dict[str, str]) -> str:
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def argocd_token(cluster: str, env: dict[str, str]) -> str:
    out = await run([str(argocd_binary()), "aws", "--cluster-name", cluster], env)
    credential: dict[str, Any] = json.loads(out)
    assert credential["kind"] == "ExecCredential"
    return str(credential["status"]["token"])


async def test_argocd_k8s_auth_tokens_are_accepted_for_their_cluster_only(
    local_eks: LocalEks, eks_plane: ControlPlane, eks_webhook: TokenReviewServer
) -> None:
    # Signed for the AWS endpoint Argo CD is given (the proxy), and for AWS's own STS host.
    via_proxy = await argocd_token(eks_plane.name, aws_env(local_eks))
    assert decode(via_proxy).startswith(local_eks.endpoint_url + "/?")
    default_host = await argocd_token(eks_plane.name, aws_env(local_eks, endpoint=False))
    assert decode(default_host).startswith("https://sts.")
    for token in (via_proxy, default_host):
        status, review = await whoami(eks_plane, token)
        assert status == 201, review
        assert review["status"]["userInfo"]["username"] == EMULATOR_ARN

    other = await argocd_token("another-cluster", aws_env(local_eks))
    assert (await whoami(eks_plane, other))[0] == 401
    assert "signature does not match" in eks_webhook.decisions[-1].detail


async def test_kubectl_runs_argocd_k8s_auth_as_its_exec_plugin(
    local_eks: LocalEks, eks_plane: ControlPlane, tmp_path: Path
) -> None:
    """The kubeconfig Argo CD builds for an `awsAuthConfig` cluster: an exec plugin."""
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "eks",
                "cluster": {
                    "server": eks_plane.server,
                    "certificate-authority-data": base64.b64encode(eks_plane.ca_pem).decode(),
                },
            }
        ],
        "users": [
            {
                "name": "argocd",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": str(argocd_binary()),
                        "args": ["aws", "--cluster-name", eks_plane.name],
                        "env": [
                            {"name": k, "value": v}
                            for k, v in aws_env(local_eks).items()
                            if k not in ("PATH", "HOME")
                        ],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [{"name": "eks", "context": {"cluster": "eks", "user": "argocd"}}],
        "current-context": "eks",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(kubeconfig))
    kubectl = [str(find_binaries(None).kubectl), "--kubeconfig", str(path)]
    env = {"HOME": str(tmp_path)}
    out = await run([*kubectl, "auth", "whoami", "-o", "json"], env)
    assert json.loads(out)["status"]["userInfo"]["username"] == EMULATOR_ARN
    out = await run([*kubectl, "get", "namespace", "kube-system"], env)
    assert "kube-system" in out


async def test_argocd_reads_the_clusterset_secret_as_an_eks_cluster(
    eks_controllers: None,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    local_eks: LocalEks,
    eks_plane: ControlPlane,
    tmp_path: Path,
) -> None:
    """Argo CD's own code turns the Secret ClusterSet wrote into a client configuration (its
    `argocd admin cluster kubeconfig` uses the same db and REST config as its controllers): the
    workload plane's server and CA, and the `argocd-k8s-auth aws` exec plugin, whose token the
    workload apiserver accepts as the IAM principal."""
    network = await Seeder(local_eks.config).network()
    await local_eks.register(eks_plane.name, eks_plane, network, tags={"role": namespace})
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "ClusterSet",
            "metadata": {"name": "fleet", "namespace": namespace},
            "spec": {
                "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": namespace}}}}]
            },
        }
    )

    async def written() -> bool:
        items = (await rt_client.list(SECRET, namespace)).items
        return any(s["metadata"]["name"] == f"fleet-{eks_plane.name}" for s in items)

    assert await eventually(written, within=30)

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "argocd-k8s-auth").symlink_to(argocd_binary())  # Argo CD's exec plugin name
    env = {**aws_env(local_eks), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    kubeconfig = tmp_path / "argocd.kubeconfig"
    await run(
        [
            str(argocd_binary()), "admin", "cluster", "kubeconfig", eks_plane.server,
            str(kubeconfig), "--namespace", namespace,
            "--kubeconfig", str(control_plane.kubeconfig()),
        ],
        {**env, "ARGOCD_BINARY_NAME": "argocd"},
    )  # fmt: skip
    user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
    assert user["exec"]["command"] == "argocd-k8s-auth"
    assert user["exec"]["args"] == ["aws", "--cluster-name", eks_plane.name]
    kubectl = [str(find_binaries(None).kubectl), "--kubeconfig", str(kubeconfig)]
    out = await run([*kubectl, "auth", "whoami", "-o", "json"], env)
    assert json.loads(out)["status"]["userInfo"]["username"] == EMULATOR_ARN
