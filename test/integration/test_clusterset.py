"""ClusterSet on a real kube-apiserver + moto: EKS clusters found by tag become Argo CD cluster
Secrets, follow tag changes, disappear with their cluster; Secrets it does not own are left
alone; no log line carries CA data; `okra get clusters` lists what was written."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.api.kinds import CLUSTERSET, SECRET
from okra_controllers.aws.config import AwsConfig
from okra_controllers.clusterset.controller import ClusterSetReconciler
from okra_runtime import Client, GenerationChanged, Manager, ManagerOptions
from okra_runtime.errors import NotFoundError
from okra_runtime.gvk import GVK
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.controlplane import UNPRIVILEGED
from okra_testkit.envtest.process import free_port
from okra_testkit.seed import Network, Seeder
from support import LogCapture, eventually, stop_manager

REPO = Path(__file__).resolve().parents[2]
EVENT = GVK("events.k8s.io", "v1", "Event")


@asynccontextmanager
async def running(
    rt_client: Client,
    namespace: str,
    cp: ControlPlane,
    aws: AwsConfig,
    reconciler_client: Client | None = None,
) -> AsyncIterator[None]:
    """The ClusterSet controller in-process, resyncing every 0.5 s; its reads and writes go
    through `reconciler_client` (the cache's through `rt_client`)."""
    cp.install_crds([REPO / "config" / "crd" / "bases"])
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    rec = ClusterSetReconciler(
        reconciler_client or rt_client,
        mgr.informer_for(CLUSTERSET),
        mgr.informer_for(SECRET),
        mgr.event_recorder("clusterset-controller"),
        aws,
        requeue_after=0.5,
        page_size=1,  # every ListClusters answer is one page: pagination is exercised
    )
    mgr.builder("clusterset").for_(CLUSTERSET, predicates=(GenerationChanged(),)).complete(rec)
    task = asyncio.create_task(mgr.start())
    try:
        yield
    finally:
        await stop_manager(mgr, task)


@pytest.fixture
async def clustersets(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    moto: MotoServer,
    logs: LogCapture,
) -> AsyncIterator[None]:
    async with running(rt_client, namespace, control_plane, moto.config):
        yield


@pytest.fixture
async def network(moto: MotoServer) -> Network:
    return await Seeder(moto.config).network()


def clusterset(name: str, ns: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "ClusterSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": role}}}}],
            "template": {
                "metadata": {
                    "labels": {
                        "role": "web",
                        "cluster": "{{.awseks.cluster.name}}",
                        "env": "{{.awseks.cluster.tags.env}}",
                    }
                }
            },
        },
    }


async def get_or_none(c: Client, name: str, ns: str) -> dict[str, Any] | None:
    try:
        return await c.get(SECRET, name, ns)
    except NotFoundError:
        return None


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


async def test_eks_clusters_become_argocd_cluster_secrets(
    clustersets: None,
    rt_client: Client,
    namespace: str,
    moto: MotoServer,
    network: Network,
    control_plane: ControlPlane,
    logs: LogCapture,
) -> None:
    seed = Seeder(moto.config)
    role = f"web-{uuid.uuid4().hex[:6]}"  # the moto server is shared by this module's tests
    names = [f"{role}-1", f"{role}-2", f"{role}-3"]
    c1 = await seed.eks_cluster(names[0], network, tags={"role": role, "env": "prod"})
    c2 = await seed.eks_cluster(names[1], network, tags={"role": role, "env": "staging"})
    await seed.eks_cluster(names[2], network, tags={"role": "other", "env": "prod"})
    by_hand: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "by-hand",
            "namespace": namespace,
            "labels": {
                "argocd.argoproj.io/secret-type": "cluster",
                "okra.mumo.co/clusterset": "cart",
                "role": "web",
            },
        },
        "stringData": {"name": "elsewhere", "server": "https://elsewhere.example", "config": "{}"},
    }
    by_hand = await rt_client.create(by_hand)
    created = await rt_client.create(clusterset("cart", namespace, role))

    s1, s2, s3 = (f"cart-{n}" for n in names)

    async def both_written() -> bool:
        return all([await get_or_none(rt_client, s, namespace) for s in (s1, s2)])

    assert await eventually(both_written, within=30)
    secret = await rt_client.get(SECRET, s1, namespace)
    assert secret["metadata"]["labels"] == {
        "argocd.argoproj.io/secret-type": "cluster",
        "okra.mumo.co/clusterset": "cart",
        "role": "web",
        "cluster": names[0],
        "env": "prod",
    }
    assert secret["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "ClusterSet",
            "name": "cart",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    data = decoded(secret)
    assert data["name"] == names[0]
    assert data["server"] == c1["endpoint"]
    assert json.loads(data["config"]) == {
        "awsAuthConfig": {"clusterName": names[0]},
        "tlsClientConfig": {"insecure": False, "caData": c1["certificateAuthority"]["data"]},
    }
    assert await get_or_none(rt_client, s3, namespace) is None  # role=other: not selected

    async def status() -> dict[str, Any]:
        return (await rt_client.get(CLUSTERSET, "cart", namespace)).get("status") or {}

    async def reported() -> bool:
        st = await status()
        return st.get("secretsWritten") == sorted([s1, s2]) and st.get("clusters") == names[:2]

    assert await eventually(reported, within=30)
    st = await status()
    assert st["notOwned"] == ["by-hand"]
    assert st["observedGeneration"] == created["metadata"]["generation"]
    ready = next(c for c in st["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "Synced")

    # A tag change updates that cluster's Secret only; equal Secrets are not rewritten.
    rv2 = (await rt_client.get(SECRET, s2, namespace))["metadata"]["resourceVersion"]
    async with moto.config.client("eks") as eks:
        await eks.tag_resource(resourceArn=c1["arn"], tags={"env": "canary"})

    async def relabelled() -> bool:
        s = await rt_client.get(SECRET, s1, namespace)
        return bool(s["metadata"]["labels"]["env"] == "canary")

    assert await eventually(relabelled, within=30)
    await asyncio.sleep(1.5)  # three more resyncs at requeue_after=0.5
    assert (await rt_client.get(SECRET, s2, namespace))["metadata"]["resourceVersion"] == rv2

    # A deleted cluster's Secret goes; the hand-made Secret stays exactly as it was.
    async with moto.config.client("eks") as eks:
        await eks.delete_cluster(name=names[1])

    async def removed() -> bool:
        return await get_or_none(rt_client, s2, namespace) is None

    assert await eventually(removed, within=30)
    still = await rt_client.get(SECRET, "by-hand", namespace)
    assert still["metadata"]["resourceVersion"] == by_hand["metadata"]["resourceVersion"]

    async def status_follows() -> bool:
        st = await status()
        return st.get("clusters") == [names[0]] and st.get("secretsWritten") == [s1]

    assert await eventually(status_follows, within=30)

    reasons: set[str] = set()

    async def told() -> bool:
        # Events are sent beside the status write, not before it: wait for them too.
        events = (await rt_client.list(EVENT, namespace)).items
        reasons.update(
            e.get("reason", "") for e in events if e.get("regarding", {}).get("name") == "cart"
        )
        return {"SecretCreated", "SecretUpdated", "SecretDeleted"} <= reasons

    assert await eventually(told, within=30), reasons

    # `okra get clusters` lists the Secrets with server, labels and owner, never the config.
    out = await okra_cli(control_plane, namespace, "get", "clusters")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert set(rows) == {s1, "by-hand"}
    assert rows[s1][1:4] == [names[0], c1["endpoint"], "cart"]
    assert "env=canary" in rows[s1][4]
    assert rows["by-hand"][3] == "-"  # no owning ClusterSet
    as_json = json.loads(await okra_cli(control_plane, namespace, "get", "clusters", "-o", "json"))
    assert {r["name"]: r["clusterSet"] for r in as_json} == {s1: "cart", "by-hand": None}
    assert c1["certificateAuthority"]["data"] not in out + json.dumps(as_json)

    # No log line carries CA data (and there were log lines about these Secrets to check).
    text = logs.text
    assert s1 in text
    for ca in (c1["certificateAuthority"]["data"], c2["certificateAuthority"]["data"]):
        assert ca not in text
        assert base64.b64encode(ca.encode()).decode() not in text

    # Deleting the ClusterSet removes its Secrets (garbage collection of owned objects), not
    # the hand-made one.
    await rt_client.delete(CLUSTERSET, "cart", namespace)

    async def collected() -> bool:
        return await get_or_none(rt_client, s1, namespace) is None

    assert await eventually(collected, within=60)
    assert await get_or_none(rt_client, "by-hand", namespace) is not None


async def test_secrets_are_read_from_the_cache_not_listed_from_the_api_server(
    rt_client: Client,
    namespace: str,
    moto: MotoServer,
    network: Network,
    control_plane: ControlPlane,
    logs: LogCapture,
) -> None:
    """The reconciler's own client may not list Secrets (RBAC): the ClusterSet still writes,
    updates and deletes its Secrets, because it reads them from the manager's cache; a LIST per
    reconcile (one per ClusterSet per resync, at the API server) would be refused."""
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    rbac = "rbac.authorization.k8s.io/v1"
    await rt_client.create(
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": {"name": "clusterset-no-list", "namespace": namespace},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "verbs": ["get", "create", "update", "delete"],
                },
                {
                    "apiGroups": ["okra.mumo.co"],
                    "resources": ["clustersets/status"],
                    "verbs": ["update"],
                },
            ],
        }
    )
    await rt_client.create(
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": "clusterset-no-list", "namespace": namespace},
            "roleRef": {
                "apiGroup": rbac.split("/")[0],
                "kind": "Role",
                "name": "clusterset-no-list",
            },
            "subjects": [{"apiGroup": rbac.split("/")[0], "kind": "User", "name": UNPRIVILEGED}],
        }
    )
    seed = Seeder(moto.config)
    role = f"web-{uuid.uuid4().hex[:6]}"
    name = f"{role}-1"
    cluster = await seed.eks_cluster(name, network, tags={"role": role, "env": "prod"})
    secret = f"cart-{name}"
    limited = await Client.from_kubeconfig(control_plane.kubeconfig(UNPRIVILEGED))
    async with limited, running(rt_client, namespace, control_plane, moto.config, limited):
        await rt_client.create(clusterset("cart", namespace, role))

        async def synced() -> bool:
            st = (await rt_client.get(CLUSTERSET, "cart", namespace)).get("status") or {}
            ready = [c for c in st.get("conditions") or [] if c["type"] == "Ready"]
            return (
                bool(ready)
                and ready[0]["reason"] == "Synced"
                and st.get("secretsWritten") == [secret]
            )

        assert await eventually(synced, within=30), logs.text[-2000:]
        async with moto.config.client("eks") as eks:
            await eks.tag_resource(resourceArn=cluster["arn"], tags={"env": "canary"})

        async def relabelled() -> bool:
            s = await get_or_none(rt_client, secret, namespace)
            return s is not None and s["metadata"]["labels"]["env"] == "canary"

        assert await eventually(relabelled, within=30), logs.text[-2000:]
        async with moto.config.client("eks") as eks:
            await eks.delete_cluster(name=name)

        async def removed() -> bool:
            return await get_or_none(rt_client, secret, namespace) is None

        assert await eventually(removed, within=30), logs.text[-2000:]
    assert not logs.at("error", "critical"), logs.at("error", "critical")[:3]


async def test_unreachable_aws_changes_no_secret_and_is_reported(
    rt_client: Client, namespace: str, control_plane: ControlPlane, logs: LogCapture
) -> None:
    """A failed ListClusters is not an empty account: the owned Secret stays, status says why."""
    created = await rt_client.create(clusterset("cart", namespace, "web"))
    owned: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "cart-web-1",
            "namespace": namespace,
            "labels": {
                "argocd.argoproj.io/secret-type": "cluster",
                "okra.mumo.co/clusterset": "cart",
            },
            "ownerReferences": [
                {
                    "apiVersion": "okra.mumo.co/v1alpha1",
                    "kind": "ClusterSet",
                    "name": "cart",
                    "uid": created["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "stringData": {"name": "web-1", "server": "https://web-1.example", "config": "{}"},
    }
    owned = await rt_client.create(owned)
    dead = AwsConfig(
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        access_key_id="testing",
        secret_access_key="testing",
        total_max_attempts=1,
    )
    async with running(rt_client, namespace, control_plane, dead):

        async def reported() -> bool:
            st = (await rt_client.get(CLUSTERSET, "cart", namespace)).get("status") or {}
            ready = [c for c in st.get("conditions") or [] if c["type"] == "Ready"]
            return bool(ready) and ready[0]["reason"] == "AWSError" and bool(st.get("errors"))

        assert await eventually(reported, within=30)
        await asyncio.sleep(1.5)  # more resyncs: still nothing deleted
    st = (await rt_client.get(CLUSTERSET, "cart", namespace))["status"]
    assert st["conditions"][0]["status"] == "False"
    assert "EKS ListClusters" in st["errors"][0]
    still = await rt_client.get(SECRET, "cart-web-1", namespace)
    assert still["metadata"]["resourceVersion"] == owned["metadata"]["resourceVersion"]


async def okra_cli(cp: ControlPlane, namespace: str, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "okra_controllers.cli",
        "--kubeconfig",
        str(cp.kubeconfig()),
        "-n",
        namespace,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()
