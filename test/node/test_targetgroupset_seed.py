"""Seed 000's AWSTargetGroupSet, exactly as the seed writes it, on the real node: no AWS Load
Balancer Controller is used. The node's plane stands for two EKS clusters in moto (tagged
`role=web`, `okra.mumo.co/version` 1.0.0 then 2.0.0), each reached through an Argo CD cluster
Secret that names it in `awsAuthConfig.clusterName`. The node is the EC2 instance of a moto
instance (its `spec.providerID`, as the AWS cloud provider sets it on EKS) and carries the seed's
`type=node` label for the test. The set makes one AWSTargetGroupBinding per cluster, each
creates its target group in moto and registers the node on port 8080, and the Cell moves the
listener rule from v1's group to v2's. The set, binding, Cell and ALB config controllers run in
one in-process Manager against the node's plane."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from integration.test_targetgroupset import CELL, TARGET_GROUP
from integration.test_targetgroupset_seed import seed_set, type_nodes
from okra_controllers.albconfig.controller import setup as setup_albconfigs
from okra_controllers.api.kinds import AWS_TARGET_GROUP_BINDING, LBC_TARGET_GROUP_BINDING, NODE
from okra_controllers.cell.controller import setup as setup_cells
from okra_controllers.settings import Settings
from okra_controllers.targetgroupbinding.controller import register as register_bindings
from okra_controllers.targetgroupbinding.plan import instance_id
from okra_controllers.targetgroupset.controller import register as register_sets
from okra_runtime import Client, Manager, ManagerOptions
from okra_runtime.errors import NoKindMatchError, NotFoundError
from okra_testkit.albtraffic import RequestFeeder
from okra_testkit.awsread import registered_targets
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import cluster_secret
from okra_testkit.node import Node
from okra_testkit.seed import Seeder
from support import eventually, stop_manager

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("okra_crds")]


async def test_the_seed_set_registers_the_node_and_drives_a_cell_from_v1_to_v2(
    control_plane: ControlPlane,
    node: Node,
    rt_client: Client,
    namespace: str,
    moto: MotoServer,
) -> None:
    # The seed's bindingSelector (role=web) must find no TargetGroupBinding here: a cluster
    # where it finds one takes the AWS Load Balancer Controller's path instead.
    try:
        found = (await rt_client.list(LBC_TARGET_GROUP_BINDING, label_selector="role=web")).items
    except NoKindMatchError:
        found = []
    assert not found, [f"{b['metadata']['namespace']}/{b['metadata']['name']}" for b in found]

    seed = Seeder(moto.config)
    network = await seed.network(cidr="10.77.0.0/16")
    alb = await seed.alb(f"seed-{namespace[-8:]}", network)
    real = await rt_client.get(NODE, node.name)
    instance = instance_id((real.get("spec") or {}).get("providerID"))
    if instance is None:  # providerID is set once and stays: a later run keeps the first one
        [instance] = await seed.instances(1, network)
        await rt_client.patch(
            NODE, node.name, {"spec": {"providerID": f"aws:///us-east-1a/{instance}"}}
        )
    await rt_client.patch(NODE, node.name, {"metadata": {"labels": {"type": "node"}}})

    settings = Settings(
        namespace=namespace, okra_namespace=namespace, aws=moto.config, concurrency=1
    )
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    register_sets(mgr, moto.config, resync=1.0)
    register_bindings(mgr, moto.config, resync=1.0)
    setup_cells(mgr, settings)
    setup_albconfigs(mgr, settings)
    task = asyncio.create_task(mgr.start())

    async def arrives(cluster: str, version: str) -> None:
        await seed.eks_cluster(
            cluster, network, tags={"role": "web", "okra.mumo.co/version": version}
        )
        secret = cluster_secret(f"argo-{cluster}", control_plane, namespace=namespace)
        config = json.loads(secret["stringData"]["config"])
        config["awsAuthConfig"] = {"clusterName": cluster}  # its bearer token still wins
        secret["stringData"]["config"] = json.dumps(config)
        await rt_client.create(secret)

    async def arn_of(binding: str) -> str:
        try:
            b = await rt_client.get(AWS_TARGET_GROUP_BINDING, binding, namespace)
        except NotFoundError:  # not made yet
            return ""
        return str((b.get("status") or {}).get("targetGroupARN") or "")

    async def registered(arn: str) -> set[str]:
        targets = await registered_targets(moto.config, arn)
        return {i for (i, port), st in targets.items() if st != "draining" and port == 8080}

    async def weights() -> dict[str, int]:
        async with moto.config.client("elbv2") as elb:
            return await RequestFeeder(moto.config, alb.listener_arn).weights(elb)

    async def cell() -> dict[str, Any]:
        return (await rt_client.get(CELL, "web", namespace)).get("status") or {}

    async def debug() -> dict[str, Any]:
        groups = (await rt_client.list(TARGET_GROUP, namespace)).items
        bindings = (await rt_client.list(AWS_TARGET_GROUP_BINDING, namespace)).items
        return {
            "cell": await cell(),
            "groups": [(g["metadata"]["name"], g["spec"]) for g in groups],
            "bindings": [(b["metadata"]["name"], b.get("status")) for b in bindings],
            "weights": await weights(),
        }

    try:
        await arrives("node-v1", "1.0.0")
        await rt_client.create(seed_set(namespace))
        await rt_client.create(
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

        async def v1_served() -> bool:
            arn = await arn_of("web-node-v1")
            return (
                bool(arn)
                and (await cell()).get("stableVersion") == "1.0.0"
                and await weights() == {arn: 100}
            )

        assert await eventually(v1_served, within=90), await debug()
        arn1 = await arn_of("web-node-v1")

        async def node_in(arn: str) -> bool:
            return await registered(arn) == await type_nodes(rt_client) == {instance}

        assert await eventually(lambda: node_in(arn1), within=60), await registered(arn1)

        await arrives("node-v2", "2.0.0")

        async def v2_served() -> bool:
            arn = await arn_of("web-node-v2")
            return (
                bool(arn)
                and (await cell()).get("stableVersion") == "2.0.0"
                and await weights() == {arn: 100}
            )

        assert await eventually(v2_served, within=120), await debug()
        arn2 = await arn_of("web-node-v2")
        assert arn2 != arn1
        assert await eventually(lambda: node_in(arn2), within=60), await registered(arn2)
    finally:
        await stop_manager(mgr, task)
        await rt_client.patch(NODE, node.name, {"metadata": {"labels": {"type": None}}})
