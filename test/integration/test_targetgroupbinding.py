"""AWSTargetGroupBinding across two real control planes and moto: the management cluster runs the
controller, the workload cluster holds Nodes (reached through an Argo CD cluster Secret with a
bearer token and CA, as in production), and the target group lives in moto."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.api.kinds import AWS_TARGET_GROUP_BINDING
from okra_controllers.api.v1alpha1.targetgroupbinding import AWSTargetGroupBinding
from okra_controllers.aws.config import AwsConfig
from okra_controllers.targetgroupbinding.controller import (
    FINALIZER,
    MISSING_TTL,
    OWNER_TAG,
    register,
)
from okra_runtime import GVK, Client, Manager, ManagerOptions
from okra_runtime.controller import Controller
from okra_runtime.crdgen import write_crds
from okra_testkit.awsread import registered_targets
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import Network, Seeder
from support import LogCapture, eventually, stop_manager

NODE = GVK("", "v1", "Node")
SECRET = GVK("", "v1", "Secret")


@dataclass
class Env:
    mgmt: Client
    workload: Client
    workload_plane: ControlPlane
    namespace: str
    suite: str
    """Unique per test: labels this test's Nodes and Secrets (the workload plane is shared)."""
    aws: AwsConfig
    calls: Counter[str]
    seed: Seeder
    network: Network
    nodes: list[str] = dataclasses.field(default_factory=list)

    def secret(self, name: str, server: str | None = None) -> dict[str, Any]:
        config = {
            "bearerToken": self.workload_plane.token(),
            "tlsClientConfig": {"caData": base64.b64encode(self.workload_plane.ca_pem).decode()},
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
                "labels": {"argocd.argoproj.io/secret-type": "cluster", "role": "web"},
            },
            "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }

    async def node(self, short: str, instance: str, **labels: str) -> str:
        name = f"{self.suite}-{short}"
        await self.workload.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"suite": self.suite, **labels}},
                "spec": {"providerID": f"aws:///us-east-1a/{instance}"},
            }
        )
        self.nodes.append(name)
        return name

    async def registered(self, arn: str) -> set[tuple[str, int]]:
        targets = await registered_targets(self.seed.config, arn)  # not counted
        return {t for t, state in targets.items() if state != "draining"}

    async def status(self, name: str) -> dict[str, Any]:
        obj = await self.mgmt.get(AWS_TARGET_GROUP_BINDING, name, self.namespace)
        return obj.get("status") or {}

    async def synced(self, name: str) -> dict[str, Any]:
        st = await self.status(name)
        for c in st.get("conditions") or []:
            if c["type"] == "Synced":
                return dict(c)
        return {}


@pytest.fixture
async def env(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    moto: MotoServer,
) -> AsyncIterator[Env]:
    control_plane.install_crds(write_crds([AWSTargetGroupBinding], tmp_path / "crds"))
    calls: Counter[str] = Counter()
    aws = dataclasses.replace(moto.config, on_call=lambda op: calls.update([op]))
    seed = Seeder(moto.config)
    network = await seed.network()
    workload = await Client.from_kubeconfig(workload_plane.kubeconfig())
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    register(mgr, aws, resync=1.0)
    task = asyncio.create_task(mgr.start())
    suite = f"tgb-{uuid.uuid4().hex[:8]}"
    e = Env(rt_client, workload, workload_plane, namespace, suite, aws, calls, seed, network)
    try:
        yield e
    finally:
        # Let the controller release its finalizers, so the namespace can go.
        left = (await rt_client.list(AWS_TARGET_GROUP_BINDING, namespace)).items
        for b in left:
            await rt_client.delete(AWS_TARGET_GROUP_BINDING, b["metadata"]["name"], namespace)

        async def released() -> bool:
            return not (await rt_client.list(AWS_TARGET_GROUP_BINDING, namespace)).items

        await eventually(released, within=30)
        await stop_manager(mgr, task)
        for n in e.nodes:
            with contextlib.suppress(Exception):
                await workload.delete(NODE, n, missing_ok=True)
        await workload.close()


def binding(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSTargetGroupBinding",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


async def test_ids_and_nodes_of_a_cluster_are_registered_and_a_deleted_node_deregistered(
    env: Env,
) -> None:
    tg = await env.seed.target_group(env.suite, env.network, port=8080)
    ip_instance, i1, i2, i3, i4 = await env.seed.instances(5, env.network)
    await env.mgmt.create(env.secret("wl"))
    await env.node("n1", i1, type="node")
    n2 = await env.node("n2", i2, type="node")
    n3 = await env.node("n3", i3, type="other")
    await env.node("n4", i4, type="across")
    await env.mgmt.create(
        binding(
            "web",
            env.namespace,
            {
                "targetGroupARN": tg,
                "targets": [
                    {"name": "specificids", "ids": [ip_instance], "port": 8080},
                    {"name": "specificnode", "clusterName": "wl", "nodeName": n3, "port": 9090},
                    {
                        # the spelling of the original's AWSTargetGroupSet-generated binding
                        "name": "nodesincluster",
                        "clusterName": "wl",
                        "nodeSelector": {"labels": {"type": "node", "suite": env.suite}},
                        "port": 8080,
                    },
                    {
                        "name": "acrossclusters",
                        "clusterSelector": {"matchLabels": {"role": "web"}},
                        "nodeSelector": {"matchLabels": {"type": "across", "suite": env.suite}},
                        "port": 8081,
                    },
                ],
            },
        )
    )
    # moto keys a group's targets by id alone, so no instance is wanted at two ports here.
    want = {(ip_instance, 8080), (i3, 9090), (i1, 8080), (i2, 8080), (i4, 8081)}

    async def all_registered() -> bool:
        return await env.registered(tg) == want and (await env.synced("web")).get("status") == (
            "True"
        )

    assert await eventually(all_registered, within=30), (
        await env.registered(tg),
        await env.status("web"),
    )
    st = await env.status("web")
    assert st["targetGroupARN"] == tg
    assert st["targets"] == [
        {"name": "specificids", "port": 8080, "ids": [ip_instance]},
        {"name": "specificnode", "port": 9090, "clusters": ["wl"], "ids": [i3]},
        {"name": "nodesincluster", "port": 8080, "clusters": ["wl"], "ids": sorted([i1, i2])},
        {"name": "acrossclusters", "port": 8081, "clusters": ["wl"], "ids": [i4]},
    ]
    assert env.calls["elbv2:RegisterTargets"] == 1  # all five in one call

    # Unchanged: reconciles keep coming (resync 1 s), AWS sees reads only.
    reads = env.calls["elbv2:DescribeTargetHealth"]

    async def resynced_twice() -> bool:
        return env.calls["elbv2:DescribeTargetHealth"] >= reads + 2

    assert await eventually(resynced_twice, within=15)
    assert env.calls["elbv2:RegisterTargets"] == 1
    assert env.calls["elbv2:DeregisterTargets"] == 0

    # A node deleted in the workload cluster: its instance leaves the group.
    await env.workload.delete(NODE, n2)

    async def deregistered() -> bool:
        return await env.registered(tg) == want - {(i2, 8080)}

    assert await eventually(deregistered, within=30), await env.registered(tg)
    assert env.calls["elbv2:DeregisterTargets"] == 1

    async def status_follows() -> bool:  # written after AWS answered, not with it
        st = await env.status("web")
        return [t["ids"] for t in st["targets"] if t["name"] == "nodesincluster"] == [[i1]]

    assert await eventually(status_follows, within=15), await env.status("web")

    # The binding deleted: the finalizer deregisters everything it registered, in one call.
    assert (
        FINALIZER
        in (await env.mgmt.get(AWS_TARGET_GROUP_BINDING, "web", env.namespace))["metadata"][
            "finalizers"
        ]
    )
    await env.mgmt.delete(AWS_TARGET_GROUP_BINDING, "web", env.namespace)

    async def released() -> bool:
        return not (await env.mgmt.list(AWS_TARGET_GROUP_BINDING, env.namespace)).items

    assert await eventually(released, within=30)
    assert await env.registered(tg) == set()
    assert env.calls["elbv2:DeregisterTargets"] == 2


async def test_an_empty_arn_creates_the_group_once_and_records_it(env: Env) -> None:
    [instance] = await env.seed.instances(1, env.network)
    name = env.suite
    await env.mgmt.create(
        binding(
            "created",
            env.namespace,
            {
                "targetGroup": {"name": name, "protocol": "HTTP", "vpcID": env.network.vpc_id},
                "targets": [{"name": "one", "ids": [instance], "port": 8080}],
            },
        )
    )

    async def recorded() -> bool:
        return (
            bool((await env.status("created")).get("targetGroupARN"))
            and (await env.synced("created")).get("status") == "True"
        )

    assert await eventually(recorded, within=30), await env.status("created")
    arn = (await env.status("created"))["targetGroupARN"]
    async with env.seed.config.client("elbv2") as elb:
        groups = (await elb.describe_target_groups(Names=[name]))["TargetGroups"]
    assert [(g["TargetGroupArn"], g["Port"], g["VpcId"]) for g in groups] == [
        (arn, 8080, env.network.vpc_id)
    ]
    assert await env.registered(arn) == {(instance, 8080)}

    reads = env.calls["elbv2:DescribeTargetHealth"]

    async def resynced_twice() -> bool:
        return env.calls["elbv2:DescribeTargetHealth"] >= reads + 2

    assert await eventually(resynced_twice, within=15)
    assert env.calls["elbv2:CreateTargetGroup"] == 1
    assert env.calls["elbv2:RegisterTargets"] == 1


async def test_a_renamed_group_is_created_and_the_previous_one_emptied(env: Env) -> None:
    """`targetGroup.name` changed: the binding creates the newly named group (tagged as its
    own), registers its targets there and deregisters them from the group it had."""
    [instance] = await env.seed.instances(1, env.network)
    first, second = f"{env.suite}-a", f"{env.suite}-b"
    spec = {
        "targetGroup": {"name": first, "vpcID": env.network.vpc_id},
        "targets": [{"name": "one", "ids": [instance], "port": 8080}],
    }
    await env.mgmt.create(binding("renamed", env.namespace, spec))

    async def in_group(name: str) -> str:
        st = await env.status("renamed")
        arn = str(st.get("targetGroupARN") or "")
        if f":targetgroup/{name}/" not in arn or (await env.synced("renamed")).get("status") != (
            "True"
        ):
            return ""
        return arn if await env.registered(arn) == {(instance, 8080)} else ""

    async def moved_to(name: str) -> bool:
        return bool(await in_group(name))

    assert await eventually(lambda: moved_to(first), within=30), await env.status("renamed")
    arn_a = await in_group(first)
    await env.mgmt.patch(
        AWS_TARGET_GROUP_BINDING,
        "renamed",
        {"spec": {"targetGroup": {"name": second}}},
        namespace=env.namespace,
    )
    assert await eventually(lambda: moved_to(second), within=30), await env.status("renamed")
    arn_b = await in_group(second)
    assert arn_b != arn_a
    assert await env.registered(arn_a) == set()
    async with env.seed.config.client("elbv2") as elb:
        tags = (await elb.describe_tags(ResourceArns=[arn_b]))["TagDescriptions"][0]["Tags"]
    assert {"Key": OWNER_TAG, "Value": f"{env.namespace}/renamed"} in tags


async def test_a_group_of_that_name_is_adopted_unless_another_binding_owns_it(env: Env) -> None:
    """A group named by `targetGroup` exists already: made without okra's tag, it is adopted
    (its other targets deregistered, an Event says so); tagged for another binding, refused."""
    [ours, stranger] = await env.seed.instances(2, env.network)
    untagged = await env.seed.target_group(f"{env.suite}-u", env.network, port=8080)
    await env.seed.register_targets(untagged, [stranger], 8080)
    other = f"{env.namespace}/someone-else"
    await env.seed.target_group(f"{env.suite}-t", env.network, port=8080, tags={OWNER_TAG: other})
    target = [{"name": "one", "ids": [ours], "port": 8080}]
    for name, group in (("adopter", f"{env.suite}-u"), ("refused", f"{env.suite}-t")):
        await env.mgmt.create(
            binding(
                name,
                env.namespace,
                {"targetGroup": {"name": group, "vpcID": env.network.vpc_id}, "targets": target},
            )
        )

    async def adopted() -> bool:
        return (await env.status("adopter")).get("targetGroupARN") == untagged and (
            await env.registered(untagged) == {(ours, 8080)}
        )

    assert await eventually(adopted, within=30), await env.status("adopter")

    async def refused() -> bool:
        return (await env.synced("refused")).get("reason") == "AWSError"

    assert await eventually(refused, within=30), await env.status("refused")
    message = (await env.synced("refused"))["message"]
    assert f"belongs to AWSTargetGroupBinding {other}" in message, message
    assert "spec.targetGroup.name" in message
    assert not (await env.status("refused")).get("targetGroupARN")
    events = (await env.mgmt.list(GVK("", "v1", "Event"), env.namespace)).items
    reasons = {(e["involvedObject"].get("name"), e["reason"]) for e in events}
    assert ("adopter", "TargetGroupAdopted") in reasons, reasons
    assert env.calls["elbv2:CreateTargetGroup"] == 0


async def test_an_unreachable_cluster_keeps_its_targets_and_is_reported(
    env: Env, logs: LogCapture
) -> None:
    tg = await env.seed.target_group(env.suite, env.network, port=8080)
    [i1] = await env.seed.instances(1, env.network)
    await env.mgmt.create(env.secret("wl"))
    await env.node("n1", i1, type="node")
    await env.mgmt.create(
        binding(
            "web",
            env.namespace,
            {
                "targetGroupARN": tg,
                "targets": [
                    {
                        "name": "nodes",
                        "clusterName": "wl",
                        "nodeSelector": {"suite": env.suite},
                        "port": 8080,
                    }
                ],
            },
        )
    )

    async def registered() -> bool:
        return await env.registered(tg) == {(i1, 8080)}

    assert await eventually(registered, within=30), await env.status("web")

    # The Secret now points where nobody listens.
    secret = await env.mgmt.get(SECRET, "wl", env.namespace)
    secret["data"] = env.secret("wl", server="https://127.0.0.1:1")["data"]
    await env.mgmt.update(secret)

    async def reported() -> bool:
        return (await env.synced("web")).get("reason") == "ClusterUnreachable"

    assert await eventually(reported, within=30), await env.status("web")
    assert "wl" in (await env.synced("web"))["message"]
    assert await env.registered(tg) == {(i1, 8080)}
    assert (await env.status("web"))["targets"][0]["ids"] == [i1]
    assert env.calls["elbv2:DeregisterTargets"] == 0

    # Back: synced again, still registered.
    secret = await env.mgmt.get(SECRET, "wl", env.namespace)
    secret["data"] = env.secret("wl")["data"]
    await env.mgmt.update(secret)

    async def recovered() -> bool:
        return (await env.synced("web")).get("status") == "True"

    assert await eventually(recovered, within=30), await env.status("web")
    assert await env.registered(tg) == {(i1, 8080)}
    assert env.calls["elbv2:DeregisterTargets"] == 0

    assert "connection to cluster built" in logs.text
    assert env.workload_plane.token() not in logs.text


async def test_a_spec_the_schema_cannot_reject_is_reported_in_status(env: Env) -> None:
    """Repeated entry names pass the CRD schema; the controller says what to fix and calls no
    AWS API for it."""
    await env.mgmt.create(
        binding(
            "twice",
            env.namespace,
            {
                "targetGroupARN": "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/x/1",
                "targets": [
                    {"name": "a", "ids": ["10.0.0.1"], "port": 80},
                    {"name": "a", "ids": ["10.0.0.2"], "port": 80},
                ],
            },
        )
    )

    async def reported() -> bool:
        return (await env.synced("twice")).get("reason") == "InvalidSpec"

    assert await eventually(reported, within=30), await env.status("twice")
    assert "a repeated" in (await env.synced("twice"))["message"]
    assert not any(op.startswith("elbv2:") for op in env.calls)


async def test_a_target_group_aws_does_not_know_is_reported_once_and_holds_nothing(
    env: Env,
) -> None:
    """The ARN names no group: the binding says so in its status and one Warning Event, is
    retried on a backoff without writing anything again, and, having registered nothing, is
    not held by the finalizer."""
    arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/none/0123456789abcdef"
    await env.mgmt.create(
        binding(
            "nowhere",
            env.namespace,
            {"targetGroupARN": arn, "targets": [{"name": "a", "ids": ["i-0"], "port": 80}]},
        )
    )

    async def reported() -> bool:
        return (await env.synced("nowhere")).get("reason") == "AWSError"

    assert await eventually(reported, within=30), await env.status("nowhere")
    assert "does not exist" in (await env.synced("nowhere"))["message"]
    version = (await env.mgmt.get(AWS_TARGET_GROUP_BINDING, "nowhere", env.namespace))["metadata"][
        "resourceVersion"
    ]
    reads = env.calls["elbv2:DescribeTargetHealth"]

    async def retried() -> bool:
        return env.calls["elbv2:DescribeTargetHealth"] >= reads + 2

    assert await eventually(retried, within=30)
    live = await env.mgmt.get(AWS_TARGET_GROUP_BINDING, "nowhere", env.namespace)
    assert live["metadata"]["resourceVersion"] == version  # no write that changes nothing
    assert FINALIZER not in (live["metadata"].get("finalizers") or [])
    events = (await env.mgmt.list(GVK("", "v1", "Event"), env.namespace)).items
    warnings = [
        e
        for e in events
        if e["involvedObject"].get("name") == "nowhere" and e.get("type") == "Warning"
    ]
    assert [(e["reason"], e.get("count", 1)) for e in warnings] == [("AWSError", 1)], warnings
    assert not any(op.startswith("elbv2:") and "Register" in op for op in env.calls)


async def test_bindings_naming_the_same_missing_group_share_one_read(
    rt_client: Client, namespace: str, control_plane: ControlPlane, tmp_path: Path, moto: MotoServer
) -> None:
    """Ten bindings name one group AWS does not know: all are reported, on one
    DescribeTargetHealth, not ten (its answer serves every binding asking within
    MISSING_TTL of the question)."""
    control_plane.install_crds(write_crds([AWSTargetGroupBinding], tmp_path / "crds"))
    calls: Counter[str] = Counter()
    aws = dataclasses.replace(moto.config, on_call=lambda op: calls.update([op]))
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    register(mgr, aws, resync=30.0)  # no retry during the test: only first reads are counted
    arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/gone/0123456789abcdef"
    names = [f"copy-{i}" for i in range(10)]
    for name in names:  # all there at the start: one worker reconciles them back to back
        await rt_client.create(
            binding(
                name,
                namespace,
                {"targetGroupARN": arn, "targets": [{"name": "a", "ids": ["i-0"], "port": 80}]},
            )
        )
    started = time.monotonic()
    task = asyncio.create_task(mgr.start())
    try:

        async def all_reported() -> bool:
            for name in names:
                live = await rt_client.get(AWS_TARGET_GROUP_BINDING, name, namespace)
                conds = (live.get("status") or {}).get("conditions") or []
                if not any(c["type"] == "Synced" and c["reason"] == "AWSError" for c in conds):
                    return False
            return True

        assert await eventually(all_reported, within=30)
        took = time.monotonic() - started
        # One read answers all ten; another is asked only once that answer is MISSING_TTL
        # old, as a machine too busy to reconcile ten bindings within it would see: at most
        # one more per MISSING_TTL since the start, so exactly one whenever it took less
        reads = calls["elbv2:DescribeTargetHealth"]
        assert 1 <= reads <= 1 + int(took // MISSING_TTL), (calls, took)
    finally:
        for name in names:
            await rt_client.delete(AWS_TARGET_GROUP_BINDING, name, namespace, missing_ok=True)
        await stop_manager(mgr, task)


async def test_a_refused_binding_is_retried_no_sooner_than_the_resync(
    rt_client: Client, namespace: str, moto: MotoServer
) -> None:
    """AWS refusing a binding is cured by a spec change (which wakes it at once) or by a
    change in AWS, which only a read sees: its first retry waits a resync, not a second (a
    thousand refused bindings would otherwise read AWS a thousand times a second)."""
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    register(mgr, moto.config, resync=45.0)
    [ctrl] = [
        getattr(r.start, "__self__", None)
        for r in mgr._runnables
        if r.name == "controller targetgroupbinding"
    ]
    assert isinstance(ctrl, Controller)
    assert ctrl.reported_base_delay == 45.0
