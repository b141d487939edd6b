"""Seed 000's AWSTargetGroupSet, applied exactly as the seed writes it, on clusters without the
AWS Load Balancer Controller: the real kube-apiserver, moto over HTTP, every controller
involved in one Manager (the set, the bindings, the Cell and its ALB config).

The clusters are EKS clusters in moto (tagged `role=web`, each with its
`okra.mumo.co/version`), reached through Argo CD cluster Secrets that name them in
`awsAuthConfig.clusterName` and carry a bearer token of the management control plane, which
serves no TargetGroupBinding kind (no AWS Load Balancer Controller there): its Nodes, each with
a providerID `aws:///us-east-1a/i-...` of a moto EC2 instance, are the clusters' nodes (both
clusters see the same Nodes: they are one API server here)."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from integration.test_seed_manifests import FIXTURE, normalised
from integration.test_targetgroupset import CELL, SECRET, TARGET_GROUP, Env, running
from okra_controllers.albconfig.controller import setup as setup_albconfigs
from okra_controllers.api.kinds import AWS_TARGET_GROUP_BINDING, NODE
from okra_controllers.cell.controller import setup as setup_cells
from okra_controllers.settings import Settings
from okra_controllers.targetgroupbinding.controller import OWNER_TAG
from okra_controllers.targetgroupbinding.controller import register as register_bindings
from okra_runtime import Client, Manager
from okra_testkit.albtraffic import RequestFeeder
from okra_testkit.awsread import registered_targets
from okra_testkit.eksauth import TokenReviewServer
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import Network, Seeder
from support import LogCapture, eventually


@pytest.fixture
def aws(moto: MotoServer) -> MotoServer:
    """moto, reset for each test (the `moto` fixture is reset once a module): the seed's set
    selects every EKS cluster tagged role=web, so none of an earlier test may be left."""
    moto.reset()
    return moto


def seed_set(namespace: str) -> dict[str, Any]:
    """Seed 000's AWSTargetGroupSet (the fixture is the seed, indentation put back), with only
    what the seed-manifest tests change: the group, the namespace."""
    docs = [d for d in yaml.safe_load_all(FIXTURE.read_text()) if d]
    (raw,) = [d for d in docs if d.get("kind") == "AWSTargetGroupSet"]
    obj = normalised(raw, "unused", namespace)
    assert obj["metadata"]["name"] == "web"
    assert obj["spec"] == raw["spec"]  # nothing else changed
    return obj


async def type_nodes(c: Client) -> set[str]:
    """The instance ids of the plane's Nodes that seed's `nodeSelector: {type: node}` selects."""
    nodes = (await c.list(NODE, label_selector="type=node")).items
    return {
        n["spec"]["providerID"].rsplit("/", 1)[-1]
        for n in nodes
        if not n["metadata"].get("deletionTimestamp")
    }


async def eks_cluster(
    e: Env, plane: ControlPlane, seed: Seeder, network: Network, cluster: str, version: str
) -> None:
    """EKS cluster `cluster` in moto (tagged `role=web` and `version`), its API server `plane`
    through an Argo CD cluster Secret that names it by its EKS name in `awsAuthConfig` only
    (the Secret's bearer token wins)."""
    await seed.eks_cluster(cluster, network, tags={"role": "web", "okra.mumo.co/version": version})
    secret = Env.secret(
        dataclasses.replace(e, workload_plane=plane),
        f"argo-{cluster}",
        version,
        awsAuthConfig={"clusterName": cluster},
    )
    await e.mgmt.create(secret)


async def test_the_seed_set_creates_a_group_per_cluster_registers_its_nodes_and_drives_a_cell(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    aws: MotoServer,
    logs: LogCapture,
) -> None:
    seed = Seeder(aws.config)
    network = await seed.network()
    alb = await seed.alb(f"web-{namespace[-8:]}", network)
    instances = await seed.instances(3, network)
    suite = uuid.uuid4().hex[:8]
    nodes: list[str] = []

    async def node(instance: str) -> str:
        name = f"seed-{suite}-{instance}"
        await rt_client.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"type": "node", "suite": suite}},
                "spec": {"providerID": f"aws:///us-east-1a/{instance}"},
            }
        )
        nodes.append(name)
        return name

    settings = Settings(
        namespace=namespace, okra_namespace=namespace, aws=aws.config, concurrency=1
    )

    def others(mgr: Manager) -> None:
        register_bindings(mgr, aws.config, resync=1.0)
        setup_cells(mgr, settings)
        setup_albconfigs(mgr, settings)

    v1, v2 = f"v1-{suite}", f"v2-{suite}"
    try:
        await node(instances[0])
        await node(instances[1])
        async with running(
            rt_client,
            namespace,
            control_plane,
            workload_plane,
            tmp_path,
            logs,
            aws.config,
            others,
        ) as e:

            async def arrives(cluster: str, version: str) -> None:
                await eks_cluster(e, control_plane, seed, network, cluster, version)

            await arrives(v1, "1.0.0")
            await e.mgmt.create(seed_set(namespace))
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
                        "updateStrategy": {
                            "type": "Canary",
                            "canary": {"steps": [{"setWeight": 50}, {"pause": {"duration": "1s"}}]},
                        },
                    },
                }
            )

            async def bindings() -> dict[str, dict[str, Any]]:
                items = (await e.mgmt.list(AWS_TARGET_GROUP_BINDING, namespace)).items
                return {b["metadata"]["name"]: b for b in items}

            async def arn_of(binding: str) -> str:
                b = (await bindings()).get(binding) or {}
                return str((b.get("status") or {}).get("targetGroupARN") or "")

            async def registered(arn: str) -> set[str]:
                targets = await registered_targets(aws.config, arn)
                return {i for (i, port), st in targets.items() if st != "draining" and port == 8080}

            async def weights() -> dict[str, int]:
                async with aws.config.client("elbv2") as elb:
                    return await RequestFeeder(aws.config, alb.listener_arn).weights(elb)

            async def cell() -> dict[str, Any]:
                return (await e.mgmt.get(CELL, "web", namespace)).get("status") or {}

            # v1: one binding from the template, one target group in moto, the nodes in it.
            async def v1_served() -> bool:
                arn = await arn_of(f"web-{v1}")
                return bool(arn) and (await cell()).get("stableVersion") == "1.0.0"

            assert await eventually(v1_served, within=60), (
                await bindings(),
                await e.status(),
                await cell(),
            )
            assert set(await bindings()) == {f"web-{v1}"}
            b1 = (await bindings())[f"web-{v1}"]
            assert b1["spec"]["targets"][0]["clusterName"] == v1
            assert b1["spec"]["targetGroup"]["name"] == f"web-{v1}"
            assert b1["spec"]["targetGroup"]["vpcID"] == network.vpc_id
            arn1 = await arn_of(f"web-{v1}")
            async with aws.config.client("elbv2") as elb:
                tg = (await elb.describe_target_groups(TargetGroupArns=[arn1]))["TargetGroups"][0]
                tags = (await elb.describe_tags(ResourceArns=[arn1]))["TagDescriptions"][0]
            assert (tg["TargetGroupName"], tg["VpcId"], tg["Port"]) == (
                f"web-{v1}",
                network.vpc_id,
                8080,
            )
            assert {"Key": OWNER_TAG, "Value": f"{namespace}/web-{v1}"} in tags["Tags"]
            want = await type_nodes(rt_client)
            assert {instances[0], instances[1]} <= want

            async def nodes_in(arn: str) -> bool:
                return await registered(arn) == await type_nodes(rt_client)

            assert await eventually(lambda: nodes_in(arn1), within=30), await registered(arn1)
            listed = (await e.mgmt.list(TARGET_GROUP, namespace)).items
            groups = {g["metadata"]["name"]: g for g in listed}
            assert set(groups) == {f"web-{v1}"}
            g1 = groups[f"web-{v1}"]
            assert g1["spec"]["arn"] == arn1
            assert g1["metadata"]["labels"]["role"] == "web"
            assert g1["metadata"]["labels"]["okra.mumo.co/version"] == "1.0.0"
            assert await weights() == {arn1: 100}

            # A node added is registered; a node removed is deregistered.
            added = await node(instances[2])

            async def has_added() -> bool:
                return instances[2] in await registered(arn1)

            assert await eventually(has_added, within=30), await registered(arn1)
            await rt_client.delete(NODE, added)
            nodes.remove(added)

            async def lost_removed() -> bool:
                return instances[2] not in await registered(arn1)

            assert await eventually(lost_removed, within=30), await registered(arn1)
            assert await nodes_in(arn1)

            # v2 arrives: its own binding and group, and the Cell moves to it.
            await arrives(v2, "2.0.0")

            async def v2_served() -> bool:
                arn2 = await arn_of(f"web-{v2}")
                st = await cell()
                return (
                    bool(arn2)
                    and st.get("stableVersion") == "2.0.0"
                    and await weights() == {arn2: 100}
                )

            assert await eventually(v2_served, within=90), (
                await bindings(),
                await e.status(),
                await cell(),
                await weights(),
            )
            arn2 = await arn_of(f"web-{v2}")
            assert arn2 != arn1
            assert await eventually(lambda: nodes_in(arn2), within=30)
            assert set(await bindings()) == {f"web-{v1}", f"web-{v2}"}

            # v1's cluster leaves EKS: its binding and AWSTargetGroup go (its nodes are
            # deregistered from its group as the binding is deleted).
            async with aws.config.client("eks") as eks:
                await eks.delete_cluster(name=v1)

            async def v1_gone() -> bool:
                listed = (await e.mgmt.list(TARGET_GROUP, namespace)).items
                names = {g["metadata"]["name"] for g in listed}
                return set(await bindings()) == {f"web-{v2}"} and names == {f"web-{v2}"}

            assert await eventually(v1_gone, within=60), (await bindings(), await e.status())

            async def v1_deregistered() -> bool:
                return not await registered(arn1)

            assert await eventually(v1_deregistered, within=30), await registered(arn1)
            ready = next(c for c in (await e.status())["conditions"] if c["type"] == "Ready")
            assert ready["status"] == "True", ready
    finally:
        for n in nodes:
            await rt_client.delete(NODE, n, missing_ok=True)


async def test_with_no_argo_cd_secret_the_set_and_its_binding_reach_the_eks_cluster_directly(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    aws: MotoServer,
    eks_webhook: TokenReviewServer,
    logs: LogCapture,
) -> None:
    """Seed 000's set with no Argo CD cluster Secret anywhere: the EKS cluster (a control plane
    of its own that accepts EKS tokens, behind moto's DescribeCluster) is reached at its endpoint
    with an EKS token by the set and by the binding it generates, which registers its node."""
    async with LocalEks(aws, webhook=eks_webhook, controller_manager=False) as eks:
        seed = Seeder(eks.config)
        network = await seed.network()
        cluster = f"direct-{uuid.uuid4().hex[:8]}"
        tags = {"role": "web", "okra.mumo.co/version": "3.0.0"}
        plane = await eks.cluster(cluster, network, tags=tags)
        [instance] = await seed.instances(1, network)
        workload = await Client.from_kubeconfig(plane.kubeconfig())
        try:
            await workload.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": "n1", "labels": {"type": "node"}},
                    "spec": {"providerID": f"aws:///us-east-1a/{instance}"},
                }
            )

            def bindings(mgr: Manager) -> None:
                register_bindings(mgr, eks.config, resync=1.0)

            async with running(
                rt_client,
                namespace,
                control_plane,
                workload_plane,
                tmp_path,
                logs,
                eks.config,
                bindings,
            ) as e:
                await e.mgmt.create(seed_set(namespace))

                async def group() -> dict[str, Any]:
                    items = (await e.mgmt.list(TARGET_GROUP, namespace)).items
                    return next(iter(items), {})

                async def served() -> bool:
                    arn = str((await group()).get("spec", {}).get("arn") or "")
                    if not arn:
                        return False
                    ids = {i for i, _ in await registered_targets(eks.config, arn)}
                    return ids == {instance}

                binding = f"web-{cluster}"

                async def debug() -> Any:
                    b = await e.mgmt.get(AWS_TARGET_GROUP_BINDING, binding, namespace)
                    return (await e.status(), b.get("status"))

                assert await eventually(served, within=60), await debug()
                g = await group()
                assert g["metadata"]["name"] == binding
                assert g["metadata"]["labels"]["okra.mumo.co/version"] == "3.0.0"
                assert (await e.mgmt.list(SECRET, namespace)).items == []
        finally:
            await workload.close()


async def test_a_binding_aws_refuses_holds_the_clusters_group_and_the_set_says_why(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    tmp_path: Path,
    aws: MotoServer,
    logs: LogCapture,
) -> None:
    """The group the cluster's binding would create exists, tagged for another binding: the
    binding is refused, no AWSTargetGroup is made, and the set's Ready condition is False
    (BindingNotSynced) with what the binding says."""
    seed = Seeder(aws.config)
    network = await seed.network()
    cluster = f"taken-{uuid.uuid4().hex[:8]}"
    other = f"{namespace}/someone-else"
    await seed.target_group(f"web-{cluster}", network, port=8080, tags={OWNER_TAG: other})

    def bindings(mgr: Manager) -> None:
        register_bindings(mgr, aws.config, resync=1.0)

    async with running(
        rt_client, namespace, control_plane, workload_plane, tmp_path, logs, aws.config, bindings
    ) as e:
        await eks_cluster(e, control_plane, seed, network, cluster, "1.0.0")
        await e.mgmt.create(seed_set(namespace))

        async def said() -> bool:
            ready = [c for c in (await e.status()).get("conditions") or [] if c["type"] == "Ready"]
            return bool(ready) and ready[0]["reason"] == "BindingNotSynced"

        assert await eventually(said, within=40), await e.status()
        st = await e.status()
        ready = next(c for c in st["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "False"
        assert f"belongs to AWSTargetGroupBinding {other}" in ready["message"], ready
        (c,) = st["clusters"]
        assert (c["name"], c["reachable"], c.get("targetGroups", 0)) == (cluster, True, 0)
        assert (await e.mgmt.list(TARGET_GROUP, namespace)).items == []
