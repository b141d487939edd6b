"""The EKS link of the standard scenario, every hop real: an EKS cluster in moto, described
through the proxy that points it at a local control plane → ClusterSet writes the Argo CD
cluster Secret (that plane's server and CA, `awsAuthConfig`, no bearer token) →
AWSTargetGroupSet reads a TargetGroupBinding in that cluster through the Secret with an EKS token,
which the workload kube-apiserver hands to the TokenReview webhook to verify."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from eks_tokens import whoami
from okra_controllers.clusters.connect import eks_token
from okra_runtime import GVK, Client
from okra_testkit.eksauth import TokenReviewServer
from okra_testkit.emulator import EMULATOR_ARN, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import Seeder
from support import eventually

REPO = Path(__file__).resolve().parents[2]
SECRET = GVK("", "v1", "Secret")
TARGET_GROUP = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
VERSION_LABEL = "okra.mumo.co/version"


async def test_eks_cluster_to_argocd_secret_to_target_groups_with_eks_tokens(
    eks_controllers: None,
    rt_client: Client,
    namespace: str,
    moto: MotoServer,
    local_eks: LocalEks,
    eks_plane: ControlPlane,
    eks_webhook: TokenReviewServer,
) -> None:
    name = eks_plane.name
    seed = Seeder(local_eks.config)
    network = await seed.network()
    tg_arn = await seed.target_group(f"tg-{namespace}", network, target_type="ip")
    await local_eks.register(name, eks_plane, network, tags={"role": namespace, "version": "2.0.0"})
    # moto itself still says a fake hostname; only the proxy's answer is the local plane.
    async with moto.config.client("eks") as eks:
        raw = (await eks.describe_cluster(name=name))["cluster"]
    assert raw["endpoint"] != eks_plane.server

    eks_plane.install_crds([REPO / "test" / "fixtures" / "targetgroupbinding-crd.yaml"])
    eks_plane.kubectl("create", "namespace", namespace)
    eks_plane.kubectl(
        "apply", "-f", "-",
        input_text=json.dumps(
            {
                "apiVersion": "elbv2.k8s.aws/v1beta1",
                "kind": "TargetGroupBinding",
                "metadata": {"name": "web", "namespace": namespace, "labels": {"role": "web"}},
                "spec": {"targetGroupARN": tg_arn, "serviceRef": {"name": "web", "port": 80}},
            }
        ),
    )  # fmt: skip
    started = time.monotonic()
    seen = len(eks_webhook.decisions)

    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "ClusterSet",
            "metadata": {"name": "fleet", "namespace": namespace},
            "spec": {
                "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": namespace}}}}],
                "template": {
                    "metadata": {"labels": {"version": "{{.awseks.cluster.tags.version}}"}}
                },
            },
        }
    )
    secret_name = f"fleet-{name}"

    async def secret() -> dict[str, Any] | None:
        items = (await rt_client.list(SECRET, namespace)).items
        return next((s for s in items if s["metadata"]["name"] == secret_name), None)

    async def is_written() -> bool:
        return await secret() is not None

    assert await eventually(is_written, within=30)
    written = await secret()
    assert written is not None
    data = {k: base64.b64decode(v).decode() for k, v in written["data"].items()}
    assert data["server"] == eks_plane.server
    config = json.loads(data["config"])
    assert config == {
        "awsAuthConfig": {"clusterName": name},
        "tlsClientConfig": {
            "insecure": False,
            "caData": base64.b64encode(eks_plane.ca_pem).decode(),
        },
    }
    assert "DescribeCluster" in local_eks.proxy.actions(since=started)

    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AWSTargetGroupSet",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "generators": [
                    {
                        "argocdClusters": {
                            "selector": {"matchLabels": {"okra.mumo.co/clusterset": "fleet"}}
                        }
                    }
                ],
                "bindingSelector": {"matchLabels": {"role": "web"}},
                "template": {
                    "metadata": {
                        "labels": {"role": "web", VERSION_LABEL: "{{.cluster.labels.version}}"}
                    }
                },
            },
        }
    )

    async def groups() -> list[dict[str, Any]]:
        return list((await rt_client.list(TARGET_GROUP, namespace)).items)

    async def discovered() -> bool:
        return any(g["spec"].get("arn") == tg_arn for g in await groups())

    tgs = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroupSet")
    assert await eventually(discovered, within=40), (
        (await rt_client.get(tgs, "web", namespace)).get("status"),
        eks_webhook.decisions[seen:],
    )
    group = next(g for g in await groups() if g["spec"]["arn"] == tg_arn)
    assert group["metadata"]["labels"][VERSION_LABEL] == "2.0.0"

    # The binding was read with an EKS token the workload apiserver had verified for this cluster.
    decisions = eks_webhook.decisions[seen:]
    assert any(
        d.cluster == name and d.authenticated and d.detail == EMULATOR_ARN for d in decisions
    )
    assert not any(not d.authenticated for d in decisions), decisions


async def test_awseks_generator_reaches_a_new_cluster_by_its_eks_endpoint_and_token(
    eks_controllers: None,
    rt_client: Client,
    namespace: str,
    local_eks: LocalEks,
    eks_webhook: TokenReviewServer,
) -> None:
    """No Argo CD Secret: AWSTargetGroupSet's `awseks` generator connects with DescribeCluster's
    endpoint and CA (the proxy's answer) and an EKS token; deleting the cluster prunes its group.
    The cluster's control plane is started by the `LocalEks.cluster` factory."""
    seed = Seeder(local_eks.config)
    network = await seed.network()
    tg_arn = await seed.target_group(f"tg-{namespace}", network, target_type="ip")
    name = f"direct-{namespace}"
    plane = await local_eks.cluster(name, network, tags={"team": namespace, "version": "3.0.0"})

    def add_binding() -> None:
        plane.install_crds([REPO / "test" / "fixtures" / "targetgroupbinding-crd.yaml"])
        plane.kubectl("create", "namespace", "apps")
        binding = {
            "apiVersion": "elbv2.k8s.aws/v1beta1",
            "kind": "TargetGroupBinding",
            "metadata": {"name": "web", "namespace": "apps", "labels": {"role": "web"}},
            "spec": {"targetGroupARN": tg_arn, "serviceRef": {"name": "web", "port": 80}},
        }
        plane.kubectl("apply", "-f", "-", input_text=json.dumps(binding))

    await asyncio.to_thread(add_binding)
    seen = len(eks_webhook.decisions)
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AWSTargetGroupSet",
            "metadata": {"name": "direct", "namespace": namespace},
            "spec": {
                "generators": [{"awseks": {"clusterSelector": {"matchTags": {"team": namespace}}}}],
                "bindingSelector": {"matchLabels": {"role": "web"}},
                "template": {
                    "metadata": {"labels": {VERSION_LABEL: "{{.awseks.cluster.tags.version}}"}}
                },
            },
        }
    )

    async def versions() -> list[str]:
        items = (await rt_client.list(TARGET_GROUP, namespace)).items
        return [g["metadata"]["labels"][VERSION_LABEL] for g in items if g["spec"]["arn"] == tg_arn]

    async def discovered() -> bool:
        return await versions() == ["3.0.0"]

    assert await eventually(discovered, within=40), eks_webhook.decisions[seen:]
    assert any(d.cluster == name and d.authenticated for d in eks_webhook.decisions[seen:])

    await local_eks.delete_cluster(name)

    async def pruned() -> bool:
        return await versions() == []

    assert await eventually(pruned, within=40)


async def test_local_eks_on_its_own_serves_tokens_and_leaves_nothing_running(
    moto: MotoServer, namespace: str
) -> None:
    """What the standard-scenario e2e and the fleet demo use: `LocalEks(moto)` with its own
    webhook; everything it started is gone after the `async with`."""
    name = f"alone-{namespace}"
    async with LocalEks(moto, controller_manager=False) as eks:
        network = await Seeder(eks.config).network()
        plane = await eks.cluster(name, network, tags={"role": "alone"})
        async with eks.config.client("eks") as client:
            described = (await client.describe_cluster(name=name))["cluster"]
        assert described["endpoint"] == plane.server
        assert base64.b64decode(described["certificateAuthority"]["data"]) == plane.ca_pem
        status, review = await whoami(plane, await eks_token(eks.config, name))
        assert (status, review["status"]["userInfo"]["username"]) == (201, EMULATOR_ARN)
        pids = plane.pids
        assert pids
        webhook = eks.webhook
        assert webhook is not None
        port = webhook.port
    assert not [p for p in pids if _alive(p)]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
