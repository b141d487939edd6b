"""AWSTargetGroupSet across two real control planes: the management cluster runs the
controller, the workload cluster holds TargetGroupBindings and is reached through an Argo CD
cluster Secret (bearer token + CA), as in production."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.albconfig.controller import setup as setup_albconfigs
from okra_controllers.api.kinds import LBC_TARGET_GROUP_BINDING, TARGET_GROUP_SET
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSet
from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell.controller import setup as setup_cells
from okra_controllers.settings import Settings
from okra_controllers.targetgroupset.controller import register
from okra_controllers.targetgroupset.plan import SET_LABEL
from okra_runtime import GVK, Client, Manager, ManagerOptions
from okra_runtime.crdgen import write_crds
from okra_runtime.metrics import REGISTRY
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import Seeder
from support import LogCapture, eventually, stop_manager

REPO = Path(__file__).resolve().parents[2]
TARGET_GROUP = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
AWS_TARGET_GROUP_BINDING = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroupBinding")
SECRET = GVK("", "v1", "Secret")
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
NAMESPACE = GVK("", "v1", "Namespace")
VERSION_LABEL = "okra.mumo.co/version"
ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/{}/0123456789abcdef"


@dataclass
class Env:
    mgmt: Client
    workload: Client
    workload_plane: ControlPlane
    namespace: str
    apps: str
    logs: LogCapture

    def secret(
        self, name: str, version: str, server: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        config = {
            **extra,
            "bearerToken": self.workload_plane.token(),
            "tlsClientConfig": {
                "caData": base64.b64encode(self.workload_plane.ca_pem).decode(),
                "insecure": False,
            },
        }
        data = {
            "name": name,
            "server": server or self.workload_plane.server,
            "config": json.dumps(config),
        }
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    "argocd.argoproj.io/secret-type": "cluster",
                    "env": "test",
                    "version": version,
                },
            },
            "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }

    async def binding(self, name: str, role: str = "web") -> None:
        await self.workload.create(
            {
                "apiVersion": "elbv2.k8s.aws/v1beta1",
                "kind": "TargetGroupBinding",
                "metadata": {
                    "name": name,
                    "namespace": self.apps,
                    "labels": {"role": role, "suite": self.apps},
                },
                "spec": {"targetGroupARN": ARN.format(name), "serviceRef": {"name": name}},
            }
        )

    async def groups(self) -> dict[str, dict[str, Any]]:
        items = (await self.mgmt.list(TARGET_GROUP, self.namespace)).items
        return {g["metadata"]["name"]: g for g in items}

    async def status(self, name: str = "web") -> dict[str, Any]:
        return (await self.mgmt.get(TARGET_GROUP_SET, name, self.namespace)).get("status") or {}


@contextlib.asynccontextmanager
async def running(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    logs: LogCapture,
    aws: AwsConfig,
    also: Callable[[Manager], None] = lambda _: None,
    resync: float = 1.0,
) -> AsyncIterator[Env]:
    """The controller (and `also` others) in one in-process Manager, logs captured."""
    crds = write_crds([AWSTargetGroupSet], tmp_path / "crds")
    control_plane.install_crds([REPO / "config" / "crd" / "bases", *crds])
    workload_plane.install_crds([REPO / "test" / "fixtures" / "targetgroupbinding-crd.yaml"])
    workload = await Client.from_kubeconfig(workload_plane.kubeconfig())
    apps = f"apps-{uuid.uuid4().hex[:8]}"
    await workload.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": apps}})
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    register(mgr, aws, resync=resync)
    also(mgr)
    task = asyncio.create_task(mgr.start())
    try:
        yield Env(rt_client, workload, workload_plane, namespace, apps, logs)
    finally:
        await stop_manager(mgr, task)
        await workload.delete(NAMESPACE, apps, missing_ok=True)
        await workload.close()


@pytest.fixture
async def env(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    logs: LogCapture,
) -> AsyncIterator[Env]:
    async with running(
        rt_client, namespace, control_plane, workload_plane, tmp_path, logs, AwsConfig()
    ) as e:
        yield e


def target_group_set(namespace: str, apps: str) -> dict[str, Any]:
    """Selects the bindings of this test only (`suite`): the workload plane is shared."""
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSTargetGroupSet",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "generators": [{"argocdClusters": {"selector": {"matchLabels": {"env": "test"}}}}],
            "bindingSelector": {"matchLabels": {"role": "web", "suite": apps}},
            "template": {
                "metadata": {
                    "labels": {
                        "role": "web",
                        VERSION_LABEL: "{{.cluster.labels.version}}",
                        "cluster": "{{.cluster.name}}",
                    }
                }
            },
        },
    }


async def test_bindings_become_target_groups_pruned_and_survive_an_unreachable_cluster(
    env: Env,
) -> None:
    await env.mgmt.create(env.secret("wl-a", "1.2.0"))
    await env.mgmt.create(env.secret("wl-b", "1.3.0"))
    await env.mgmt.create(target_group_set(env.namespace, env.apps))
    await env.binding("web")
    await env.binding("other", role="batch")  # not selected by bindingSelector

    a_web = f"web-wl-a-{env.apps}-web"
    b_web = f"web-wl-b-{env.apps}-web"

    async def both_registered() -> bool:
        return set(await env.groups()) == {a_web, b_web}

    assert await eventually(both_registered, within=30), await env.groups()
    groups = await env.groups()
    a = groups[a_web]
    assert a["spec"]["arn"] == ARN.format("web")
    assert a["metadata"]["labels"][VERSION_LABEL] == "1.2.0"
    assert a["metadata"]["labels"]["cluster"] == "wl-a"
    assert a["metadata"]["labels"][SET_LABEL] == "web"
    assert a["metadata"]["ownerReferences"][0]["kind"] == "AWSTargetGroupSet"
    assert groups[b_web]["metadata"]["labels"][VERSION_LABEL] == "1.3.0"

    async def ready() -> bool:
        st = await env.status()
        cond: dict[str, Any] = next(
            (c for c in st.get("conditions") or [] if c["type"] == "Ready"), {}
        )
        return cond.get("status") == "True" and len(st.get("clusters") or []) == 2

    assert await eventually(ready, within=30), await env.status()
    st = await env.status()
    assert {(c["name"], c["reachable"], c["targetGroups"]) for c in st["clusters"]} == {
        ("wl-a", True, 1),
        ("wl-b", True, 1),
    }

    # A group okra did not make, with the set's label but no owner: left alone.
    await env.mgmt.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AWSTargetGroup",
            "metadata": {
                "name": "by-hand",
                "namespace": env.namespace,
                "labels": {SET_LABEL: "web"},
            },
            "spec": {"arn": ARN.format("by-hand")},
        }
    )

    # Binding deleted in the workload cluster: its groups are pruned.
    await env.workload.delete(LBC_TARGET_GROUP_BINDING, "web", env.apps)

    async def pruned() -> bool:
        return set(await env.groups()) == {"by-hand"}

    assert await eventually(pruned, within=30), await env.groups()

    # wl-b now points at a server nobody listens on.
    await env.binding("api")
    a_api, b_api = f"web-wl-a-{env.apps}-api", f"web-wl-b-{env.apps}-api"

    async def api_registered() -> bool:
        return {a_api, b_api} <= set(await env.groups())

    assert await eventually(api_registered, within=30), await env.groups()
    broken = env.secret("wl-b", "1.3.0", server="https://127.0.0.1:1")
    await env.mgmt.patch(SECRET, "wl-b", {"data": broken["data"]}, namespace=env.namespace)

    async def b_unreachable() -> bool:
        st = await env.status()
        b: dict[str, Any] = next((c for c in st.get("clusters") or [] if c["name"] == "wl-b"), {})
        return b.get("reachable") is False

    assert await eventually(b_unreachable, within=30), await env.status()
    st = await env.status()
    b = next(c for c in st["clusters"] if c["name"] == "wl-b")
    assert "127.0.0.1:1" in b["message"]
    assert b["targetGroups"] == 1  # kept, not pruned
    ready_cond = next(c for c in st["conditions"] if c["type"] == "Ready")
    assert (ready_cond["status"], ready_cond["reason"]) == ("False", "ClusterUnreachable")

    # wl-a still works while wl-b is down: a new binding is registered for wl-a only.
    await env.binding("cart")
    a_cart = f"web-wl-a-{env.apps}-cart"

    async def cart_registered() -> bool:
        return a_cart in await env.groups()

    assert await eventually(cart_registered, within=30), await env.groups()
    groups = await env.groups()
    assert b_api in groups  # the unreachable cluster's group stays
    assert f"web-wl-b-{env.apps}-cart" not in groups

    # wl-b back: reachable again, its groups caught up.
    await env.mgmt.patch(
        SECRET, "wl-b", {"data": env.secret("wl-b", "1.3.0")["data"]}, namespace=env.namespace
    )

    async def recovered() -> bool:
        return f"web-wl-b-{env.apps}-cart" in await env.groups() and all(
            c["reachable"] for c in (await env.status()).get("clusters") or []
        )

    assert await eventually(recovered, within=30), await env.status()

    # No credential reached the logs.
    text = env.logs.text
    assert "connection to cluster built" in text  # the capture works
    assert env.workload_plane.token() not in text
    ca_b64 = base64.b64encode(env.workload_plane.ca_pem).decode()
    assert ca_b64[:40] not in text
    assert "BEGIN CERTIFICATE" not in text


async def test_binding_template_generates_awstargetgroupbindings_pruned_with_their_binding(
    env: Env,
) -> None:
    await env.mgmt.create(env.secret("wl-a", "1.2.0"))
    tgs = target_group_set(env.namespace, env.apps)
    tgs["spec"]["bindingTemplate"] = {
        "metadata": {
            "name": "web-{{.cluster.name}}",
            "labels": {"role": "web", VERSION_LABEL: "{{.cluster.labels.version}}"},
            "annotations": {"okra.mumo.co/from": "{{.cluster.name}}"},
        },
        "spec": {
            "targets": [
                {
                    "name": "nodes",
                    "clusterName": "{{.cluster.name}}",
                    "nodeSelector": {"type": "node"},
                    "port": 8080,
                }
            ]
        },
    }
    await env.mgmt.create(tgs)
    await env.binding("web")

    async def bindings() -> dict[str, dict[str, Any]]:
        items = (await env.mgmt.list(AWS_TARGET_GROUP_BINDING, env.namespace)).items
        return {b["metadata"]["name"]: b for b in items}

    async def generated() -> bool:
        return "web-wl-a" in await bindings() and f"web-wl-a-{env.apps}-web" in await env.groups()

    assert await eventually(generated, within=30), (await bindings(), await env.status())
    b = (await bindings())["web-wl-a"]
    assert b["spec"]["targetGroupARN"] == ARN.format("web")
    assert b["spec"]["targets"] == [
        {
            "name": "nodes",
            "clusterName": "wl-a",
            "nodeSelector": {"matchLabels": {"type": "node"}},
            "port": 8080,
        }
    ]
    labels = b["metadata"]["labels"]
    assert (labels["role"], labels[VERSION_LABEL], labels[SET_LABEL]) == ("web", "1.2.0", "web")
    assert b["metadata"]["annotations"]["okra.mumo.co/from"] == "wl-a"
    owner = b["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("AWSTargetGroupSet", "web", True)

    # Idle: nothing is rewritten.
    version = b["metadata"]["resourceVersion"]
    await asyncio.sleep(2.5)  # two resyncs
    assert (await bindings())["web-wl-a"]["metadata"]["resourceVersion"] == version

    # The TargetGroupBinding deleted in the workload cluster: group and binding pruned.
    await env.workload.delete(LBC_TARGET_GROUP_BINDING, "web", env.apps)

    async def pruned() -> bool:
        return not await bindings() and not await env.groups()

    assert await eventually(pruned, within=30), (await bindings(), await env.groups())


async def test_a_binding_in_the_workload_cluster_starts_a_cell_rollout(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    moto: MotoServer,
    logs: LogCapture,
) -> None:
    """Seed 001's standard scenario end to end: TargetGroupBinding (workload) → AWSTargetGroup
    (management, version label from the template) → Cell → ALB listener rule (moto)."""
    seed = Seeder(moto.config)
    network = await seed.network()
    alb = await seed.alb(f"web-{namespace[-8:]}", network)
    tg_arn = await seed.target_group(f"web-v1-{namespace[-8:]}"[:32], network)
    await seed.register_targets(tg_arn, await seed.instances(1, network))
    settings = Settings(
        namespace=namespace, okra_namespace=namespace, aws=moto.config, concurrency=1
    )

    def cells(mgr: Manager) -> None:
        setup_cells(mgr, settings)
        setup_albconfigs(mgr, settings)

    async with running(
        rt_client, namespace, control_plane, workload_plane, tmp_path, logs, moto.config, cells
    ) as e:
        await e.mgmt.create(e.secret("wl-a", "1.0.0"))
        await e.mgmt.create(target_group_set(namespace, e.apps))
        await e.mgmt.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "Cell",
                "metadata": {"name": "web", "namespace": namespace},
                "spec": {
                    "ingress": {
                        "type": "AWSApplicationLoadBalancer",
                        "awsApplicationLoadBalancer": {
                            "listenerARN": alb.listener_arn,
                            "targetGroupSelector": {"matchLabels": {"role": "web"}},
                        },
                    },
                    "updateStrategy": {"type": "Canary", "canary": {"steps": []}},
                },
            }
        )
        await e.workload.create(
            {
                "apiVersion": "elbv2.k8s.aws/v1beta1",
                "kind": "TargetGroupBinding",
                "metadata": {
                    "name": "web",
                    "namespace": e.apps,
                    "labels": {"role": "web", "suite": e.apps},
                },
                "spec": {"targetGroupARN": tg_arn, "serviceRef": {"name": "web", "port": 80}},
            }
        )

        async def forwarded() -> dict[str, int]:
            async with moto.config.client("elbv2") as elb:
                rules = (await elb.describe_rules(ListenerArn=alb.listener_arn))["Rules"]
            for r in rules:
                for a in r["Actions"]:
                    if not r.get("IsDefault") and a["Type"] == "forward":
                        tgs = a["ForwardConfig"]["TargetGroups"]
                        return {t["TargetGroupArn"]: t["Weight"] for t in tgs}
            return {}

        async def rolled_out() -> bool:
            st = (await e.mgmt.get(CELL, "web", namespace)).get("status") or {}
            return st.get("stableVersion") == "1.0.0" and await forwarded() == {tg_arn: 100}

        assert await eventually(rolled_out, within=60), (
            (await e.mgmt.get(CELL, "web", namespace)).get("status"),
            await e.groups(),
        )
        group = (await e.groups())[f"web-wl-a-{e.apps}-web"]
        assert group["spec"]["arn"] == tg_arn
        assert group["metadata"]["labels"][VERSION_LABEL] == "1.0.0"
        assert e.workload_plane.token() not in e.logs.text


async def test_awseks_generator_selects_clusters_by_tag_and_templates_their_tags(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    moto: MotoServer,
    logs: LogCapture,
) -> None:
    """EKS clusters (moto) tagged for this set: one reached through the Argo CD Secret naming it
    in awsAuthConfig (its bearer token wins), one without a Secret reached at its EKS endpoint
    with an EKS token, which does not exist here: reported unreachable, the other unaffected."""
    seed = Seeder(moto.config)
    network = await seed.network()
    team = namespace
    reached, direct = f"a-{namespace}", f"b-{namespace}"
    await seed.eks_cluster(reached, network, tags={"team": team, "version": "2.0.0"})
    await seed.eks_cluster(direct, network, tags={"team": team, "version": "2.1.0"})
    await seed.eks_cluster(f"c-{namespace}", network, tags={"team": "other"})
    async with running(
        rt_client, namespace, control_plane, workload_plane, tmp_path, logs, moto.config
    ) as e:
        secret = e.secret("argo-a", "ignored", awsAuthConfig={"clusterName": reached})
        secret["metadata"]["labels"].pop("env")
        await e.mgmt.create(secret)
        tgs = target_group_set(namespace, e.apps)
        tgs["spec"]["generators"] = [{"awseks": {"clusterSelector": {"matchTags": {"team": team}}}}]
        tgs["spec"]["template"]["metadata"]["labels"] = {
            "role": "web",
            VERSION_LABEL: "{{.awseks.cluster.tags.version}}",
            "cluster": "{{.awseks.cluster.name}}",
        }
        await e.mgmt.create(tgs)
        await e.binding("web")

        name = f"web-{reached}-{e.apps}-web"

        async def registered() -> bool:
            return name in await e.groups()

        assert await eventually(registered, within=40), (await e.groups(), await e.status())
        labels = (await e.groups())[name]["metadata"]["labels"]
        assert labels[VERSION_LABEL] == "2.0.0"
        assert labels["cluster"] == reached

        async def reported() -> bool:
            return len((await e.status()).get("clusters") or []) == 2

        assert await eventually(reported, within=40), await e.status()
        clusters = {c["name"]: c for c in (await e.status())["clusters"]}
        assert set(clusters) == {reached, direct}  # the "other" team's cluster is not selected
        assert clusters[reached]["reachable"] is True
        assert clusters[direct]["reachable"] is False
        assert set(await e.groups()) == {name}
        assert e.workload_plane.token() not in e.logs.text


async def test_a_stopped_workload_apiserver_is_reported_and_recovers(
    env: Env, control_plane: ControlPlane, workload_plane: ControlPlane
) -> None:
    """Two clusters: the management plane doubles as a second workload cluster. Stopping
    the real workload apiserver marks only that cluster unreachable; its groups stay,
    the other cluster keeps being served, and all recovers when the apiserver is back."""
    control_plane.install_crds([REPO / "test" / "fixtures" / "targetgroupbinding-crd.yaml"])
    live = env.secret("wl-live", "1.2.0")
    live_config = {
        "bearerToken": control_plane.token(),
        "tlsClientConfig": {"caData": base64.b64encode(control_plane.ca_pem).decode()},
    }
    live["data"]["server"] = base64.b64encode(control_plane.server.encode()).decode()
    live["data"]["config"] = base64.b64encode(json.dumps(live_config).encode()).decode()
    await env.mgmt.create(live)
    await env.mgmt.create(env.secret("wl-down", "1.2.0"))
    await env.mgmt.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": env.apps}})

    async def mgmt_binding(name: str) -> None:
        await env.mgmt.create(
            {
                "apiVersion": "elbv2.k8s.aws/v1beta1",
                "kind": "TargetGroupBinding",
                "metadata": {
                    "name": name,
                    "namespace": env.apps,
                    "labels": {"role": "web", "suite": env.apps},
                },
                "spec": {"targetGroupARN": ARN.format(name), "serviceRef": {"name": name}},
            }
        )

    await env.mgmt.create(target_group_set(env.namespace, env.apps))
    await env.binding("web")
    await mgmt_binding("web")
    live_web, down_web = f"web-wl-live-{env.apps}-web", f"web-wl-down-{env.apps}-web"

    async def registered(*names: str) -> bool:
        return set(names) <= set(await env.groups())

    assert await eventually(lambda: registered(live_web, down_web), within=30)

    def cluster(status: dict[str, Any], name: str) -> dict[str, Any]:
        return next((c for c in status.get("clusters") or [] if c["name"] == name), {})

    workload_plane.stop_apiserver()
    try:

        async def down_reported() -> bool:
            st = await env.status()
            return (
                cluster(st, "wl-down").get("reachable") is False
                and cluster(st, "wl-live").get("reachable") is True
            )

        assert await eventually(down_reported, within=60), await env.status()
        await mgmt_binding("web2")  # the live cluster is still served
        assert await eventually(lambda: registered(f"web-wl-live-{env.apps}-web2"), within=30)
        assert down_web in await env.groups()  # the stopped cluster's group stays
    finally:
        workload_plane.start_apiserver()

    async def recovered() -> bool:
        return cluster(await env.status(), "wl-down").get("reachable") is True

    assert await eventually(recovered, within=60), await env.status()
    await env.mgmt.delete(NAMESPACE, env.apps, missing_ok=True)


async def test_a_status_write_does_not_wake_the_set_again(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    logs: LogCapture,
) -> None:
    """One reconcile per spec change: the status it writes comes back through the set's own
    watch and must not start another (for a thousand sets, a second round of cluster reads
    and EKS listings for nothing)."""

    def reconciles() -> float:
        labels = {"controller": "targetgroupset", "result": "requeue_after"}
        return REGISTRY.get_sample_value("controller_runtime_reconcile_total", labels) or 0.0

    start = reconciles()
    async with running(
        rt_client,
        namespace,
        control_plane,
        workload_plane,
        tmp_path,
        logs,
        AwsConfig(),
        resync=3600.0,
    ) as e:
        await e.mgmt.create(target_group_set(namespace, e.apps))

        async def observed(gen: int) -> bool:
            st = await e.status()
            return st.get("observedGeneration") == gen and bool(st.get("conditions"))

        assert await eventually(functools.partial(observed, 1)), await e.status()
        tgs = await e.mgmt.get(TARGET_GROUP_SET, "web", namespace)
        tgs["spec"]["bindingSelector"]["matchLabels"]["role"] = "api"
        await e.mgmt.update(tgs)
        assert await eventually(functools.partial(observed, 2)), await e.status()

        async def counted() -> bool:
            return reconciles() - start >= 2

        assert await eventually(counted)
        assert reconciles() - start == 2
