"""AWSApplicationLoadBalancerConfig against a real kube-apiserver and a moto server: the
controller creates, modifies, moves and deletes one listener rule, writes nothing when
AWS already matches, and reports bad specs, foreign rules and AWS errors.

AWS calls are counted through `AwsConfig.on_call` (a botocore `before-call` hook on the
controller's clients); the tests' own seeding and inspection use an uncounted config.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from faultproxy import FaultProxy
from okra_controllers.albconfig import FINALIZER, register, setup
from okra_controllers.albconfig.controller import AlbConfigReconciler
from okra_controllers.api.kinds import ALB_CONFIG
from okra_controllers.api.v1alpha1.common import ARN_MAX_LENGTH
from okra_controllers.aws import elbv2
from okra_controllers.aws.config import AwsConfig
from okra_controllers.settings import Settings
from okra_runtime import GVK, Client, InvalidError, Manager, ManagerOptions, NotFoundError
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import LoadBalancer, Network, Seeder
from receiver import Receiver, serve
from support import LogCapture, eventually, find_events, stop_manager

REPO = Path(__file__).resolve().parents[2]
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
WRITES = {"CreateRule", "ModifyRule", "DeleteRule", "SetRulePriorities", "AddTags", "RemoveTags"}


class Calls:
    """Every AWS operation the controller called, in order."""

    def __init__(self) -> None:
        self.ops: list[str] = []

    def __call__(self, op: str) -> None:
        self.ops.append(op.split(":", 1)[1])

    def mark(self) -> int:
        return len(self.ops)

    def since(self, mark: int) -> list[str]:
        return self.ops[mark:]

    def writes(self, mark: int = 0) -> list[str]:
        return [op for op in self.since(mark) if op in WRITES]


@dataclasses.dataclass
class Env:
    """One test's world: a listener with target groups, and a way to run the controller."""

    client: Client
    namespace: str
    moto: MotoServer
    calls: Calls
    alb: LoadBalancer
    tgs: list[str]
    start: Callable[..., Awaitable[AlbConfigReconciler | None]]

    @property
    def aws(self) -> AwsConfig:
        return self.moto.config

    async def rules(self) -> list[dict[str, Any]]:
        return await elbv2.describe_rules(self.aws, self.alb.listener_arn)

    async def rule_at(self, priority: int) -> dict[str, Any] | None:
        return next((r for r in await self.rules() if r["Priority"] == str(priority)), None)

    async def default_rule(self) -> dict[str, Any]:
        return next(r for r in await self.rules() if r["IsDefault"])

    async def get(self, name: str) -> dict[str, Any]:
        return await self.client.get(ALB_CONFIG, name, self.namespace)

    async def status(self, name: str) -> dict[str, Any]:
        return (await self.get(name)).get("status") or {}

    async def synced(self, name: str) -> dict[str, Any]:
        return next(
            (c for c in (await self.status(name)).get("conditions") or [] if c["type"] == "Synced"),
            {},
        )

    async def events(self, name: str, reason: str) -> list[dict[str, Any]]:
        return await find_events(self.client, self.namespace, reason, name)

    async def wait_synced(self, name: str, generation: int | None = None) -> dict[str, Any]:
        async def done() -> bool:
            st = await self.status(name)
            cond = await self.synced(name)
            return cond.get("status") == "True" and (
                generation is None or st.get("observedGeneration") == generation
            )

        assert await eventually(done, within=30), await self.status(name)
        return await self.status(name)

    async def wait_reason(self, name: str, reason: str) -> dict[str, Any]:
        async def done() -> bool:
            cond = await self.synced(name)
            return cond.get("status") == "False" and cond.get("reason") == reason

        assert await eventually(done, within=30), await self.status(name)
        return await self.synced(name)


def config(
    env: Env,
    name: str,
    weights: list[int],
    rule: dict[str, Any] | None = None,
    tgs: list[str] | None = None,
) -> dict[str, Any]:
    arns = tgs or env.tgs
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSApplicationLoadBalancerConfig",
        "metadata": {"name": name, "namespace": env.namespace},
        "spec": {
            "listenerARN": env.alb.listener_arn,
            "listenerRule": rule
            if rule is not None
            else {"priority": 10, "hosts": ["web.example.com"], "pathPatterns": ["/*"]},
            "forwardTargetGroups": [
                {"name": f"tg{i}", "arn": arn, "weight": w}
                for i, (arn, w) in enumerate(zip(arns, weights, strict=False))
            ],
        },
    }


def weights_of(rule: dict[str, Any] | None) -> dict[str, int]:
    assert rule is not None
    return dict(elbv2.forward_weights(rule["Actions"][0]))


@pytest.fixture
async def env(
    rt_client: Client, namespace: str, control_plane: ControlPlane, moto: MotoServer
) -> AsyncIterator[Env]:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    seed = Seeder(moto.config)
    network: Network = await seed.network()
    suffix = uuid.uuid4().hex[:8]
    alb = await seed.alb(f"web-{suffix}", network)
    tgs = [await seed.target_group(f"tg{i}-{suffix}", network) for i in range(6)]
    calls = Calls()
    counted = dataclasses.replace(moto.config, on_call=calls)
    running: list[tuple[Manager, asyncio.Task[None]]] = []

    async def start(
        resync: float | None = None,
        endpoint_url: str | None = None,
        drift_check: float | None = None,
    ) -> AlbConfigReconciler | None:
        """Run the controller in-process: through `setup` (as okra-manager does), or
        `register` when a test needs a short resync or drift check; `endpoint_url` sends
        its AWS calls elsewhere (a fault proxy in front of moto)."""
        mgr = Manager(
            rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
        )
        aws = dataclasses.replace(counted, endpoint_url=endpoint_url or counted.endpoint_url)
        rec = None
        if resync is None and drift_check is None:
            setup(mgr, Settings(namespace, namespace, aws, concurrency=2))
        else:
            rec = register(mgr, aws, resync=resync or 300.0, drift_check=drift_check or 60.0)
        running.append((mgr, asyncio.create_task(mgr.start())))
        return rec

    yield Env(rt_client, namespace, moto, calls, alb, tgs, start)
    for mgr, task in running:
        await stop_manager(mgr, task)


async def test_creates_the_rule_and_reads_the_weights_back(env: Env) -> None:
    await env.start()
    default_before = await env.default_rule()
    await env.client.create(config(env, "web", [80, 20]))

    st = await env.wait_synced("web")
    rule = await env.rule_at(10)
    assert rule is not None
    assert weights_of(rule) == {env.tgs[0]: 80, env.tgs[1]: 20}
    assert st["ruleARN"] == rule["RuleArn"]
    assert st["observedGeneration"] == 1
    assert st["lastAppliedTime"]
    assert st["applied"] == {
        "listenerARN": env.alb.listener_arn,
        "listenerRule": {"priority": 10, "hosts": ["web.example.com"], "pathPatterns": ["/*"]},
        "forwardTargetGroups": [
            {"name": "tg0", "arn": env.tgs[0], "weight": 80},
            {"name": "tg1", "arn": env.tgs[1], "weight": 20},
        ],
    }
    assert (await env.synced("web"))["reason"] == "Synced"
    tags = await elbv2.rule_tags(env.aws, rule["RuleArn"])
    assert tags == {elbv2.OWNER_TAG: f"{env.namespace}/web"}
    assert FINALIZER in (await env.get("web"))["metadata"]["finalizers"]
    assert env.calls.writes() == ["CreateRule"]
    assert await eventually(lambda: _has(env.events("web", "RuleCreated")))
    assert await env.default_rule() == default_before


async def test_a_weight_change_is_one_modify_rule(env: Env) -> None:
    await env.start()
    await env.client.create(config(env, "web", [80, 20]))
    arn = (await env.wait_synced("web"))["ruleARN"]
    mark = env.calls.mark()

    await env.client.patch(
        ALB_CONFIG, "web", {"spec": config(env, "web", [40, 60])["spec"]}, namespace=env.namespace
    )

    st = await env.wait_synced("web", generation=2)
    assert [t["weight"] for t in st["applied"]["forwardTargetGroups"]] == [40, 60]
    assert env.calls.writes(mark) == ["ModifyRule"]
    rule = await env.rule_at(10)
    assert rule is not None
    assert rule["RuleArn"] == arn
    assert weights_of(rule) == {env.tgs[0]: 40, env.tgs[1]: 60}
    assert await eventually(lambda: _has(env.events("web", "RuleModified")))


async def test_reordering_the_target_groups_writes_nothing(env: Env) -> None:
    await env.start()
    spec = config(env, "web", [70, 20, 10], tgs=env.tgs[:3])
    await env.client.create(spec)
    await env.wait_synced("web")
    mark = env.calls.mark()

    reordered = list(reversed(spec["spec"]["forwardTargetGroups"]))
    rule = {"priority": 10, "pathPatterns": ["/*"], "hosts": ["WEB.example.com"]}
    await env.client.patch(
        ALB_CONFIG,
        "web",
        {"spec": {"forwardTargetGroups": reordered, "listenerRule": rule}},
        namespace=env.namespace,
    )

    await env.wait_synced("web", generation=2)  # the spec change was reconciled
    ops = env.calls.since(mark)
    # No write; at most the listing (the rule read back after the create was put into the
    # shared listing, which may still be fresh).
    assert set(ops) <= {"DescribeRules"}
    assert weights_of(await env.rule_at(10)) == {
        env.tgs[0]: 70,
        env.tgs[1]: 20,
        env.tgs[2]: 10,
    }


async def test_the_original_okras_spelling_is_applied_and_named(env: Env) -> None:
    """`listener.rule` with `forward.targetGroups` (the original okra's Go API): the rule
    AWS gets is the one okra's spelling says, `lastReadTime` says when it was read back,
    and a DeprecatedSpelling Event names okra's spelling."""
    await env.start()
    obj = config(env, "web", [80, 20])
    spec = obj["spec"]
    rule = spec.pop("listenerRule")
    rule["headers"] = {"X-Canary": ["yes"]}
    rule["forward"] = {"targetGroups": spec.pop("forwardTargetGroups")}
    spec["listener"] = {"rule": rule}
    await env.client.create(obj)

    st = await env.wait_synced("web")
    assert weights_of(await env.rule_at(10)) == {env.tgs[0]: 80, env.tgs[1]: 20}
    assert st["applied"]["listenerRule"]["headers"] == [{"name": "X-Canary", "values": ["yes"]}]
    assert st["lastReadTime"]

    async def named() -> bool:
        notes = [e.get("note", "") for e in await env.events("web", "DeprecatedSpelling")]
        return "spec.listener.rule.forward.targetGroups: write spec.forwardTargetGroups" in notes

    assert await eventually(named)


async def test_idle_resync_reads_once_and_writes_nothing(env: Env) -> None:
    rec = await env.start(resync=0.2)
    assert rec is not None
    await env.client.create(config(env, "web", [50, 50]))
    await env.wait_synced("web")
    version = (await env.get("web"))["metadata"]["resourceVersion"]

    async def cached() -> bool:  # the controller's cache holds its status write
        obj = rec.configs.get("web", env.namespace)
        return obj is not None and obj["metadata"]["resourceVersion"] == version

    assert await eventually(cached)
    mark = env.calls.mark()

    async def resynced_three_times() -> bool:
        return len(env.calls.since(mark)) >= 3

    assert await eventually(resynced_three_times, within=30)
    assert set(env.calls.since(mark)) == {"DescribeRules"}
    assert (await env.get("web"))["metadata"]["resourceVersion"] == version  # no status write


async def test_idle_configs_of_a_listener_share_one_describe_rules_per_period(
    env: Env,
) -> None:
    """Three synced configs on one listener, drift check every second: counted at the AWS
    endpoint (the emulator's CountingProxy), at most one DescribeRules per listener per
    period and no write; the shared listing they all read is still what AWS answers (no
    reader mutated it)."""
    period = 1.0
    proxy = CountingProxy(env.moto.endpoint_url)
    await proxy.start()
    try:
        rec = await env.start(drift_check=period, endpoint_url=proxy.endpoint_url)
        for i, name in enumerate(("a", "b", "c")):
            rule = {"priority": 10 + i, "hosts": [f"{name}.example.com"]}
            await env.client.create(config(env, name, [50, 50], rule=rule))
        for name in ("a", "b", "c"):
            await env.wait_synced(name)
        await asyncio.sleep(2 * period)  # the configs fall in step with the shared listing
        since = time.monotonic()
        await asyncio.sleep(5 * period)  # a window of five periods, counted
        window = proxy.actions(since)
        assert rec is not None
        async with env.aws.client("elbv2") as elb:  # the shared listing (if still fresh)
            cached = await rec.listener_rules.get(elb, env.alb.listener_arn)
    finally:
        await proxy.stop()
    assert window, "the idle configs did not look at AWS"
    assert set(window) == {"DescribeRules"}  # no write
    assert window.count("DescribeRules") <= 5 + 1  # one per period (+1 at the window's edge)
    assert list(cached) == await env.rules()


async def test_a_rule_changed_by_hand_is_restored_and_reported(env: Env) -> None:
    """Weights, priority, deletion: each edit made outside okra is undone within the drift
    check period, with a DriftRepaired Event saying what was found."""
    await env.start(drift_check=1.0)
    await env.client.create(config(env, "web", [50, 50]))
    arn = (await env.wait_synced("web"))["ruleARN"]
    want = {env.tgs[0]: 50, env.tgs[1]: 50}

    async def restored() -> bool:
        rule = await env.rule_at(10)
        return rule is not None and weights_of(rule) == want

    async def reported(text: str) -> bool:
        return any(text in e.get("note", "") for e in await env.events("web", "DriftRepaired"))

    hand = [
        {"TargetGroupArn": env.tgs[0], "Weight": 10},
        {"TargetGroupArn": env.tgs[1], "Weight": 90},
    ]
    async with env.aws.client("elbv2") as elb:
        await elb.modify_rule(
            RuleArn=arn,
            Actions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": hand}}],
        )
    # (The hand edit may be undone before a read here: with a 1 s period on a loaded machine
    # it was. The Event's note below, which names the weights found, shows okra saw it.)
    assert await eventually(restored, within=30)
    name0, name1 = (t.split(":targetgroup/")[1].split("/")[0] for t in env.tgs[:2])
    found = f"weights {name0}=10, {name1}=90 instead of {name0}=50, {name1}=50"
    assert await eventually(lambda: reported(found), within=30)

    async with env.aws.client("elbv2") as elb:
        await elb.set_rule_priorities(RulePriorities=[{"RuleArn": arn, "Priority": 20}])
    assert await eventually(lambda: reported("priority 20 instead of 10"), within=30)
    assert await eventually(restored, within=30)

    await elbv2.delete_rule(env.aws, arn)
    assert await eventually(lambda: reported("rule deleted"), within=30)
    assert await eventually(restored, within=30)
    # A change made through the spec is no drift.
    await env.client.patch(
        ALB_CONFIG, "web", {"spec": config(env, "web", [40, 60])["spec"]}, namespace=env.namespace
    )
    await env.wait_synced("web", generation=2)
    assert len(await env.events("web", "DriftRepaired")) == 3


async def test_a_repaired_drift_is_notified_to_the_cell_that_owns_the_config(env: Env) -> None:
    """The Cell's subscription to `on-drift-repaired` gets the DriftRepaired message,
    through the Cell's outbox (emptied once delivered). A second subscription names a
    service the namespace does not define: a Warning Event on the Cell says what to add."""
    r = Receiver()
    runner = await serve(r)
    try:
        await env.client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "okra-notifications", "namespace": env.namespace},
                "data": {"service.webhook.ops": f"url: {r.url}/hook\n"},
            }
        )
        cell = await env.client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "Cell",
                "metadata": {
                    "name": "web",
                    "namespace": env.namespace,
                    "annotations": {
                        "notifications.okra.mumo.co/subscribe.on-drift-repaired.ops": "#ops",
                        "notifications.okra.mumo.co/subscribe.on-rollout-failed.ops": "",
                        "notifications.okra.mumo.co/subscribe.on-drift-repaired.pager": "",
                    },
                },
                "spec": {
                    "ingress": {
                        "type": "AWSApplicationLoadBalancer",
                        "awsApplicationLoadBalancer": {
                            "listenerARN": env.alb.listener_arn,
                            "targetGroupSelector": {"matchLabels": {"role": "web"}},
                        },
                    },
                },
            }
        )
        owned = config(env, "web", [50, 50])
        owned["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "Cell",
                "name": "web",
                "uid": cell["metadata"]["uid"],
                "controller": True,
            }
        ]
        await env.start(drift_check=1.0)
        await env.client.create(owned)
        arn = (await env.wait_synced("web"))["ruleARN"]
        hand = [
            {"TargetGroupArn": env.tgs[0], "Weight": 10},
            {"TargetGroupArn": env.tgs[1], "Weight": 90},
        ]
        async with env.aws.client("elbv2") as elb:
            await elb.modify_rule(
                RuleArn=arn,
                Actions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": hand}}],
            )

        async def notified() -> bool:
            return bool(r.bodies())

        assert await eventually(notified, within=30)
        [n] = r.bodies()
        assert n["trigger"] == "on-drift-repaired"
        assert (n["cell"], n["config"], n["namespace"]) == ("web", "web", env.namespace)
        assert n["recipient"] == "#ops"
        assert "changed outside okra (weights" in n["message"]
        assert n["message"].endswith("restored")

        async def outbox_empty() -> bool:
            c = await env.client.get(CELL, "web", env.namespace)
            return not (c.get("status") or {}).get("notifications")

        assert await eventually(outbox_empty, within=30)  # both entries: sent, or dropped

        async def reported() -> bool:  # the Event is written in the background
            return bool(await env.events("web", "NotificationServiceMissing"))

        assert await eventually(reported, within=10)
        missing = await env.events("web", "NotificationServiceMissing")
        print(f"\nundefined service reported: {[e['note'] for e in missing]}")
        [event] = missing
        assert event["type"] == "Warning"
        assert event["regarding"]["kind"] == "Cell"
        assert "on-drift-repaired not sent" in event["note"]
        assert "service.webhook.pager or service.slack.pager" in event["note"]
        assert [b["trigger"] for b in r.bodies()] == ["on-drift-repaired"]  # ops only
    finally:
        await runner.cleanup()


async def test_the_api_server_rejects_what_the_schema_can_say(env: Env) -> None:
    too_many = config(env, "six", [10] * 6)
    assert len(too_many["spec"]["forwardTargetGroups"]) == 6
    with pytest.raises(InvalidError) as e6:
        await env.client.create(too_many)
    assert any(c["field"] == "spec.forwardTargetGroups" for c in e6.value.causes)
    with pytest.raises(InvalidError) as e1000:
        await env.client.create(config(env, "heavy", [1000, 0]))
    assert any(c["field"] == "spec.forwardTargetGroups[0].weight" for c in e1000.value.causes)
    # An ARN longer than AWS allows is refused here, never signed and sent to AWS.
    long_arn = config(env, "long-arn", [60, 40])
    long_arn["spec"]["listenerARN"] += "x" * ARN_MAX_LENGTH
    with pytest.raises(InvalidError) as elong:
        await env.client.create(long_arn)
    assert any(c["field"] == "spec.listenerARN" for c in elong.value.causes)


@pytest.mark.parametrize(
    ("spec_change", "message"),
    [
        pytest.param(
            {"listenerRule": {"priority": 10}},
            "spec.listenerRule: no condition; a rule other than the listener's default needs",
            id="no condition",
        ),
        pytest.param(
            {"weights": [0, 0]},
            "spec.forwardTargetGroups: every weight is 0",
            id="zero total weight",
        ),
        pytest.param(
            {"duplicate": True},
            "spec.forwardTargetGroups[1].arn: the same target group as spec.forwardTargetGroups[0]",
            id="duplicate arn",
        ),
        pytest.param(
            {"listenerRule": {"priority": 10, "methods": ["get"]}},
            "spec.listenerRule.methods[0]: 'get'; ALB compares methods case-sensitively",
            id="lower-case method",
        ),
    ],
)
async def test_an_invalid_spec_is_reported_without_any_aws_call(
    env: Env, spec_change: dict[str, Any], message: str
) -> None:
    await env.start()
    obj = config(env, "bad", spec_change.get("weights", [60, 40]), spec_change.get("listenerRule"))
    if spec_change.get("duplicate"):
        obj["spec"]["forwardTargetGroups"][1]["arn"] = env.tgs[0]
    await env.client.create(obj)

    cond = await env.wait_reason("bad", "InvalidSpec")
    assert message in cond["message"]
    assert await eventually(lambda: _has(env.events("bad", "InvalidSpec")))
    warning = (await env.events("bad", "InvalidSpec"))[0]
    assert warning["type"] == "Warning"
    assert message in warning["note"]
    assert env.calls.ops == []
    assert await env.rule_at(10) is None


async def test_a_foreign_rule_at_the_priority_is_a_conflict(env: Env) -> None:
    async with env.aws.client("elbv2") as elb:
        foreign = (
            await elb.create_rule(
                ListenerArn=env.alb.listener_arn,
                Priority=10,
                Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api"]}}],
                Actions=[{"Type": "forward", "TargetGroupArn": env.tgs[5]}],
                Tags=[{"Key": elbv2.OWNER_TAG, "Value": f"{env.namespace}/someone-else"}],
            )
        )["Rules"][0]
    await env.start()
    await env.client.create(config(env, "web", [80, 20]))

    cond = await env.wait_reason("web", "Conflict")
    assert foreign["RuleArn"] in cond["message"]
    assert f"tagged {elbv2.OWNER_TAG}={env.namespace}/someone-else" in cond["message"]
    assert "choose another spec.listenerRule.priority" in cond["message"]
    assert await eventually(lambda: _has(env.events("web", "Conflict")))
    assert env.calls.writes() == []
    after = await env.rule_at(10)
    assert after is not None
    assert after["RuleArn"] == foreign["RuleArn"]
    assert after["Actions"] == foreign["Actions"]


async def test_a_rule_with_the_same_conditions_is_adopted(env: Env) -> None:
    async with env.aws.client("elbv2") as elb:
        existing = (
            await elb.create_rule(
                ListenerArn=env.alb.listener_arn,
                Priority=10,
                Conditions=[
                    {"Field": "path-pattern", "Values": ["/*"]},
                    {"Field": "host-header", "HostHeaderConfig": {"Values": ["web.example.com"]}},
                ],
                Actions=[{"Type": "forward", "TargetGroupArn": env.tgs[0]}],
            )
        )["Rules"][0]
    await env.start()
    await env.client.create(config(env, "web", [30, 70]))

    st = await env.wait_synced("web")
    assert st["ruleARN"] == existing["RuleArn"]
    assert weights_of(await env.rule_at(10)) == {env.tgs[0]: 30, env.tgs[1]: 70}
    assert env.calls.writes() == ["ModifyRule"]


async def test_a_new_priority_moves_the_rule(env: Env) -> None:
    await env.start()
    await env.client.create(config(env, "web", [80, 20]))
    arn = (await env.wait_synced("web"))["ruleARN"]
    mark = env.calls.mark()

    rule = {"priority": 20, "hosts": ["web.example.com"], "pathPatterns": ["/*"]}
    await env.client.patch(
        ALB_CONFIG, "web", {"spec": {"listenerRule": rule}}, namespace=env.namespace
    )

    st = await env.wait_synced("web", generation=2)
    assert st["ruleARN"] == arn
    assert st["applied"]["listenerRule"]["priority"] == 20
    assert env.calls.writes(mark) == ["SetRulePriorities"]
    assert await env.rule_at(10) is None
    moved = await env.rule_at(20)
    assert moved is not None
    assert moved["RuleArn"] == arn


async def test_deleting_the_config_deletes_only_its_rule(env: Env) -> None:
    async with env.aws.client("elbv2") as elb:
        other = (
            await elb.create_rule(
                ListenerArn=env.alb.listener_arn,
                Priority=5,
                Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/x"]}}],
                Actions=[{"Type": "forward", "TargetGroupArn": env.tgs[5]}],
            )
        )["Rules"][0]
    await env.start()
    default_before = await env.default_rule()
    await env.client.create(config(env, "web", [80, 20]))
    arn = (await env.wait_synced("web"))["ruleARN"]
    mark = env.calls.mark()

    await env.client.delete(ALB_CONFIG, "web", env.namespace)

    async def gone() -> bool:
        try:
            await env.get("web")
        except NotFoundError:
            return True
        return False

    assert await eventually(gone, within=30)
    assert env.calls.writes(mark) == ["DeleteRule"]
    arns = {r["RuleArn"] for r in await env.rules()}
    assert arn not in arns
    assert other["RuleArn"] in arns
    assert await env.default_rule() == default_before


async def test_an_aws_error_is_reported_and_the_config_can_still_be_deleted(env: Env) -> None:
    await env.start()
    missing = env.alb.listener_arn[:-16] + "0000000000000000"
    obj = config(env, "lost", [80, 20])
    obj["spec"]["listenerARN"] = missing
    await env.client.create(obj)

    cond = await env.wait_reason("lost", "AWSError")
    assert "DescribeRules: ListenerNotFound" in cond["message"]
    assert await eventually(lambda: _has(env.events("lost", "AWSError")))
    assert env.calls.writes() == []
    # Nothing on AWS to clean up, so no finalizer was written either.
    assert FINALIZER not in ((await env.get("lost"))["metadata"].get("finalizers") or [])

    await env.client.delete(ALB_CONFIG, "lost", env.namespace)

    async def gone() -> bool:
        try:
            await env.get("lost")
        except NotFoundError:
            return True
        return False

    assert await eventually(gone, within=30)
    assert env.calls.writes() == []


async def _has(events: Awaitable[list[dict[str, Any]]]) -> bool:
    return bool(await events)


async def test_a_lost_create_rule_reply_adopts_the_rule_without_an_error(
    env: Env, logs: LogCapture
) -> None:
    """AWS creates the rule but the reply is lost (connection reset after forwarding);
    botocore retries and AWS answers PriorityInUse. The rule at the priority carries
    okra's tag and the planned conditions: it is adopted, with no error logged."""
    async with FaultProxy(env.moto.endpoint_url, script={"CreateRule": ["reset-after"]}) as fp:
        await env.start(endpoint_url=fp.endpoint_url)
        await env.client.create(config(env, "web", [80, 20]))
        st = await env.wait_synced("web")
        creates = [fault for op, fault in fp.log if op == "CreateRule"]
    print(f"\nCreateRule calls through the proxy: {creates}")
    assert creates == ["reset-after", ""]  # applied, reply lost; the retry found it taken
    at_10 = [r for r in await env.rules() if r["Priority"] == "10"]
    assert [r["RuleArn"] for r in at_10] == [st["ruleARN"]]
    assert weights_of(at_10[0]) == {env.tgs[0]: 80, env.tgs[1]: 20}
    assert logs.at("error", "critical") == []
    assert await env.events("web", "RuleAdopted")
