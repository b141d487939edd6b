"""AWSTargetGroupSet's `awsTargetGroups` generator against moto over HTTP: target groups made
with tags, as Terraform makes them, with no AWS Load Balancer Controller and no
TargetGroupBinding anywhere; okra's AWS calls pass through a counting proxy in front of moto,
which can also refuse an operation the way AWS refuses a missing permission."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from okra_controllers.albconfig.controller import setup as setup_albconfigs
from okra_controllers.api.kinds import TARGET_GROUP_SET
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSet
from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell.controller import setup as setup_cells
from okra_controllers.settings import Settings
from okra_controllers.targetgroupset.controller import register
from okra_controllers.targetgroupset.plan import SET_LABEL, TARGET_GROUP_ANNOTATION
from okra_runtime import GVK, Client, Manager, ManagerOptions
from okra_runtime.crdgen import write_crds
from okra_testkit.emulator import CountingProxy, MotoServer, action_of
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import Network, Seeder
from support import LogCapture, eventually, find_events, stop_manager, wait_events

REPO = Path(__file__).resolve().parents[2]
TARGET_GROUP = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
ALB_CONFIG = GVK("okra.mumo.co", "v1alpha1", "AWSApplicationLoadBalancerConfig")
VERSION = "okra.mumo.co/version"

_DENIED = (
    '<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">'
    "<Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User is not authorized to"
    " perform: elasticloadbalancing:{op}</Message></Error><RequestId>denied</RequestId>"
    "</ErrorResponse>"
)


class RefusingProxy(CountingProxy):
    """The counting proxy, answering the operations in `refuse` with AWS's 403 AccessDenied
    instead of forwarding them."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.refuse: set[str] = set()

    async def _forward(self, request: Any) -> Any:
        op = action_of(request, await request.read())
        if op in self.refuse:
            self.calls.append((time.monotonic(), op))
            body = _DENIED.format(op=op).encode()
            return web.Response(status=403, body=body, content_type="text/xml")
        return await super()._forward(request)


@dataclass
class Env:
    client: Client
    namespace: str
    seed: Seeder
    network: Network
    proxy: RefusingProxy
    suite: str
    """The value of the `suite` tag on this test's target groups (moto is shared)."""

    def name(self, short: str) -> str:
        """A target group name unique to this test (AWS allows 32 characters)."""
        return f"{short}-{self.suite}"[:32]

    async def target_group(self, short: str, **tags: str) -> str:
        return await self.seed.target_group(
            self.name(short), self.network, tags={"app": "web", "suite": self.suite, **tags}
        )

    async def groups(self) -> dict[str, dict[str, Any]]:
        items = (await self.client.list(TARGET_GROUP, self.namespace)).items
        return {g["metadata"]["name"]: g for g in items}

    async def status(self, name: str = "web") -> dict[str, Any]:
        got = await self.client.get(TARGET_GROUP_SET, name, self.namespace)
        return got.get("status") or {}

    async def ready(self, name: str = "web") -> dict[str, Any]:
        conds = (await self.status(name)).get("conditions") or []
        return next((c for c in conds if c["type"] == "Ready"), {})

    def target_group_set(self, **generator: Any) -> dict[str, Any]:
        return {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AWSTargetGroupSet",
            "metadata": {"name": "web", "namespace": self.namespace},
            "spec": {
                "generators": [
                    {
                        "awsTargetGroups": {
                            "targetGroupSelector": {
                                "matchTags": {"app": "web", "suite": self.suite}
                            },
                            **generator,
                        }
                    }
                ],
                "template": {
                    "metadata": {
                        "labels": {"role": "web", "tg": "{{.awsTargetGroup.name}}"},
                    }
                },
            },
        }


@contextlib.asynccontextmanager
async def running(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    tmp_path: Path,
    moto: MotoServer,
    also: Callable[[Manager, AwsConfig], None] = lambda _m, _a: None,
) -> AsyncIterator[Env]:
    """The controller (and `also` others) in an in-process Manager, its AWS calls through a
    proxy in front of moto; resync 1 s."""
    crds = write_crds([AWSTargetGroupSet], tmp_path / "crds")
    control_plane.install_crds([REPO / "config" / "crd" / "bases", *crds])
    proxy = RefusingProxy(moto.endpoint_url)
    await proxy.start()
    aws = dataclasses.replace(moto.config, endpoint_url=proxy.endpoint_url)
    seed = Seeder(moto.config)
    network = await seed.network()
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    register(mgr, aws, resync=1.0)
    also(mgr, aws)
    task = asyncio.create_task(mgr.start())
    try:
        yield Env(rt_client, namespace, seed, network, proxy, uuid.uuid4().hex[:8])
    finally:
        await stop_manager(mgr, task)
        await proxy.stop()


async def test_tagged_target_groups_become_versioned_awstargetgroups_in_batches_and_are_pruned(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    tmp_path: Path,
    moto: MotoServer,
    logs: LogCapture,
) -> None:
    async with running(rt_client, namespace, control_plane, tmp_path, moto) as env:
        arns: dict[str, str] = {}
        for i in range(23):  # more than one DescribeTags batch (20)
            short = f"w{i:02}"
            arns[short] = await env.target_group(short, **{VERSION: "1.0.0" if i < 20 else "v2"})
        await env.target_group("nover")  # no version tag
        await env.target_group("bad", **{VERSION: "banana"})
        await env.seed.target_group(  # another app: not selected
            env.name("api"), env.network, tags={"app": "api", "suite": env.suite, VERSION: "1"}
        )
        await env.client.create(env.target_group_set())
        expected = {f"web-{env.name(s)}" for s in arns}

        async def all_registered() -> bool:
            return set(await env.groups()) == expected

        assert await eventually(all_registered, within=40), (
            sorted(await env.groups()),
            await env.status(),
        )
        groups = await env.groups()
        one = groups[f"web-{env.name('w00')}"]
        assert one["spec"]["arn"] == arns["w00"]
        assert one["metadata"]["labels"] == {
            "role": "web",
            "tg": env.name("w00"),
            VERSION: "1.0.0",
            SET_LABEL: "web",
        }
        assert one["metadata"]["annotations"][TARGET_GROUP_ANNOTATION] == env.name("w00")
        assert groups[f"web-{env.name('w21')}"]["metadata"]["labels"][VERSION] == "v2"

        # The two that cannot be labelled are reported, not guessed.
        status = await env.status()
        tagged = status["awsTargetGroups"]
        assert (tagged["read"], tagged["matched"], tagged["targetGroups"]) == (True, 25, 23)
        problems = {p["name"]: p["message"] for p in tagged["problems"]}
        assert set(problems) == {env.name("nover"), env.name("bad")}
        assert "has no tag 'okra.mumo.co/version'" in problems[env.name("nover")]
        assert "'banana' is not a version" in problems[env.name("bad")]
        ready = await env.ready()
        assert (ready["status"], ready["reason"]) == ("False", "TargetGroupProblem")
        await wait_events(env.client, namespace, "TargetGroupProblem", "web")

        # Every walk reads the tags in batches of at most 20 ARNs: 25+ groups, 2+ calls a
        # walk. Looked at between two walks (a walk may be between its DescribeTargetGroups
        # and its DescribeTags at any one reading).
        async def batched() -> bool:
            actions = env.proxy.actions()
            walks = actions.count("DescribeTargetGroups")
            return walks >= 1 and actions.count("DescribeTags") >= 2 * walks

        assert await eventually(batched, within=30, interval=0.05), env.proxy.actions()

        # The version tag fixed in AWS: the group appears and the set is Ready.
        async with moto.config.client("elbv2") as elb:
            bad = (await elb.describe_target_groups(Names=[env.name("bad")]))["TargetGroups"][0]
            await elb.add_tags(
                ResourceArns=[bad["TargetGroupArn"]], Tags=[{"Key": VERSION, "Value": "3.0.0"}]
            )
            await elb.delete_target_group(TargetGroupArn=arns["w03"])  # gone from AWS
            await elb.remove_tags(ResourceArns=[arns["w04"]], TagKeys=["app"])  # stops matching
        expected = (expected | {f"web-{env.name('bad')}"}) - {
            f"web-{env.name('w03')}",
            f"web-{env.name('w04')}",
        }

        async def followed() -> bool:
            return set(await env.groups()) == expected

        assert await eventually(followed, within=40), (
            sorted(await env.groups()),
            await env.status(),
        )
        assert (await env.groups())[f"web-{env.name('bad')}"]["metadata"]["labels"][
            VERSION
        ] == "3.0.0"
        pruned = await wait_events(env.client, namespace, "TargetGroupPruned", "web")

        async def both_pruned_said() -> bool:
            pruned[:] = await find_events(env.client, namespace, "TargetGroupPruned", "web")
            return len(pruned) >= 2

        assert await eventually(both_pruned_said, within=30)
        assert any(env.name("w03") in e["note"] for e in pruned)

        async def only_nover_left() -> bool:
            problems = (await env.status())["awsTargetGroups"].get("problems") or []
            return [p["name"] for p in problems] == [env.name("nover")]

        assert await eventually(only_nover_left, within=30), await env.status()

        # Idle: several more walks of AWS, and no AWSTargetGroup is written again.
        versions = {n: g["metadata"]["resourceVersion"] for n, g in (await env.groups()).items()}
        walked = env.proxy.actions().count("DescribeTargetGroups")

        async def walked_thrice_more() -> bool:
            return env.proxy.actions().count("DescribeTargetGroups") >= walked + 3

        assert await eventually(walked_thrice_more, within=60)
        after = {n: g["metadata"]["resourceVersion"] for n, g in (await env.groups()).items()}
        assert after == versions
        writes = {"CreateTargetGroup", "ModifyTargetGroup", "AddTags", "RemoveTags"}
        assert not writes & set(env.proxy.actions())  # okra wrote nothing to AWS


async def test_an_aws_refusal_is_reported_changes_nothing_and_is_retried(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    tmp_path: Path,
    moto: MotoServer,
    logs: LogCapture,
) -> None:
    async with running(rt_client, namespace, control_plane, tmp_path, moto) as env:
        v1 = await env.target_group("a", **{VERSION: "1.0.0"})
        await env.target_group("b", **{VERSION: "1.0.0"})
        await env.client.create(env.target_group_set())
        names = {f"web-{env.name('a')}", f"web-{env.name('b')}"}

        async def registered() -> bool:
            return set(await env.groups()) == names and (await env.ready()).get("status") == "True"

        assert await eventually(registered, within=40), await env.status()
        before = {n: g["metadata"]["resourceVersion"] for n, g in (await env.groups()).items()}

        # okra's role loses DescribeTags; meanwhile a target group is deleted in AWS.
        env.proxy.refuse.add("DescribeTags")
        async with moto.config.client("elbv2") as elb:
            await elb.delete_target_group(TargetGroupArn=v1)

        async def refused() -> bool:
            return (await env.ready()).get("reason") == "AWSReadFailed"

        assert await eventually(refused, within=30), await env.status()
        status = await env.status()
        assert status["awsTargetGroups"]["read"] is False
        message = (await env.ready())["message"]
        assert "AccessDenied" in message
        assert "IAM policy" in message  # what to do about it
        events = await wait_events(env.client, namespace, "AWSReadFailed", "web")
        assert events[0]["type"] == "Warning"

        # Retried (on the backoff of reported errors: 1 s, doubling), and while refused nothing
        # found by tags is changed (the deleted group stays).
        refusals = env.proxy.actions().count("DescribeTags")

        async def retried() -> bool:
            return env.proxy.actions().count("DescribeTags") > refusals

        assert await eventually(retried, within=90)
        after = {n: g["metadata"]["resourceVersion"] for n, g in (await env.groups()).items()}
        assert after == before

        # The permission restored: the next retry reads AWS and prunes the deleted group.
        env.proxy.refuse.clear()

        async def recovered() -> bool:
            return (
                set(await env.groups()) == {f"web-{env.name('b')}"}
                and (await env.ready()).get("status") == "True"
            )

        assert await eventually(recovered, within=120), await env.status()
        await wait_events(env.client, namespace, "AWSReadRecovered", "web")


async def test_tagged_target_groups_drive_a_cell_from_v1_to_v2(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    tmp_path: Path,
    moto: MotoServer,
    logs: LogCapture,
) -> None:
    """Seed 003 with okra: Terraform made and tagged the target groups (eksctl attached the
    nodes), okra's AWSTargetGroupSet finds them, a seed-000 Cell moves the ALB from v1 to v2."""

    def cells(mgr: Manager, aws: AwsConfig) -> None:
        settings = Settings(namespace=namespace, okra_namespace=namespace, aws=aws, concurrency=1)
        setup_cells(mgr, settings)
        setup_albconfigs(mgr, settings)

    async with running(rt_client, namespace, control_plane, tmp_path, moto, cells) as env:
        alb = await env.seed.alb(f"web-{env.suite}", env.network)
        v1 = await env.target_group("blue", **{VERSION: "1.0.0"})
        await env.seed.register_targets(v1, await env.seed.instances(1, env.network))
        await env.client.create(env.target_group_set())
        await env.client.create(
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

        async def forwarded() -> dict[str, int]:
            async with moto.config.client("elbv2") as elb:
                rules = (await elb.describe_rules(ListenerArn=alb.listener_arn))["Rules"]
            for r in rules:
                for a in r["Actions"]:
                    if not r.get("IsDefault") and a["Type"] == "forward":
                        tgs = a["ForwardConfig"]["TargetGroups"]
                        return {t["TargetGroupArn"]: t["Weight"] for t in tgs}
            return {}

        async def cell() -> dict[str, Any]:
            return (await env.client.get(CELL, "web", namespace)).get("status") or {}

        async def on_v1() -> bool:
            return (await cell()).get("stableVersion") == "1.0.0" and await forwarded() == {v1: 100}

        assert await eventually(on_v1, within=60), (
            await cell(),
            [c.get("status") for c in (await env.client.list(ALB_CONFIG, namespace)).items],
        )

        # The new cluster's target group, tagged v2 by Terraform.
        v2 = await env.target_group("green", **{VERSION: "2.0.0"})
        await env.seed.register_targets(v2, await env.seed.instances(1, env.network))
        seen: list[dict[str, int]] = []

        async def on_v2() -> bool:
            weights = await forwarded()
            if weights and (not seen or seen[-1] != weights):
                seen.append(weights)
            return (await cell()).get("stableVersion") == "2.0.0" and weights.get(v2) == 100

        assert await eventually(on_v2, within=90), (
            await cell(),
            seen,
            [c.get("status") for c in (await env.client.list(ALB_CONFIG, namespace)).items],
            {n: g["metadata"]["labels"] for n, g in (await env.groups()).items()},
        )
        assert all(w == 0 for arn, w in (await forwarded()).items() if arn != v2)
        assert any(w.get(v1) == 50 and w.get(v2) == 50 for w in seen), seen  # the canary step
