"""Argo CD's own EKS tokens are verified like okra's: `argocd-k8s-auth aws --cluster-name X`
(the exec credential plugin Argo CD runs for a cluster Secret with `awsAuthConfig`), from the
real `argocd` binary (`hack/build-argocd.sh`), signing with moto's keys, is accepted by the
workload apiserver for cluster X only; kubectl (client-go) runs it as an exec plugin, as Argo CD's
application-controller does."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from eks_tokens import decode, whoami
from okra_controllers.aws.eksauth import TokenReviewServer
from okra_controllers.aws.emulator import EMULATOR_ARN
from okra_controllers.aws.localeks import LocalEks
from okra_runtime.envtest import ControlPlane, find_binaries


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
