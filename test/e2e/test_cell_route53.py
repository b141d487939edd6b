"""Cells whose traffic is Route 53 weighted records, end to end: okra-manager (a real
process) on the real control plane, moto for AWS over HTTP, one load balancer per version
(as when every cluster's Ingress gets its own ALB), a weighted name in front. The records
are read back with ListResourceRecordSets at every hold point.

One okra-manager serves the whole module's story (several Cells at once, to keep wall time
small): a canary walking 0 -> 20 -> 50 -> 100 with an analysis step that starts only once
the step's weights are in effect (INSYNC + TTL, from the config's status); a failing
analysis sending all weight back; a record edited by hand restored with an Event; the
manager SIGKILLed while a change is PENDING resuming by GetChange without writing it again;
and a zone and a shared ALB in another account reached through an assumed role, a wrong
role being a clear status error with nothing written.

moto's limits, worked around here: its Route 53 answers every change INSYNC at once and
GetChange INSYNC for any ID, so a PENDING change is made by the test's proxy (it rewrites
those two answers while `hold` is set); its STS lets any role be assumed, so a role whose
trust policy refuses okra is the proxy answering AccessDenied for that role.
"""

from __future__ import annotations

import datetime
import json
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import iampolicy
from okra_controllers.aws.config import AwsConfig
from okra_runtime import GVK, Client, NotFoundError
from okra_runtime.timeutil import parse_time
from okra_testkit.awsread import weighted_records
from okra_testkit.emulator import CountingProxy, MotoServer, action_of
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import Seeder
from support import eventually, wait_events

from .conftest import (
    BLOCKLIST,
    CELL,
    RUN,
    VERSION_ARG,
    VERSION_LABEL,
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    error_rate_template,
    promote,
)
from .test_cli_plan import okra_cli

R53_CONFIG = GVK("okra.mumo.co", "v1alpha1", "AWSRoute53RecordSetConfig")
ACCOUNT_B = "222222222222"
ROLE_B = f"arn:aws:iam::{ACCOUNT_B}:role/okra-dns"
WRONG_ROLE = f"arn:aws:iam::{ACCOUNT_B}:role/not-trusting-okra"
TTL = 2
ANALYSIS = {"analysis": {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}}


class Route53Proxy(CountingProxy):
    """The counting proxy, plus: while `hold` is set, Route 53 says every change is PENDING
    (ChangeResourceRecordSets and GetChange answers); AssumeRole of `denied_role` is refused
    as IAM refuses a role whose trust policy does not name the caller."""

    hold = False
    denied_role = ""

    async def _forward(self, request: Any) -> Any:
        body = await request.read()
        action = action_of(request, body)
        if action == "AssumeRole":
            form = urllib.parse.parse_qs(body.decode())
            if form.get("RoleArn") == [self.denied_role]:
                self.calls.append((0.0, action))
                return web.Response(
                    status=403,
                    content_type="text/xml",
                    text="<ErrorResponse xmlns='https://sts.amazonaws.com/doc/2011-06-15/'>"
                    "<Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User is not "
                    f"authorized to perform: sts:AssumeRole on resource: {self.denied_role}"
                    "</Message></Error>"
                    "<RequestId>r</RequestId></ErrorResponse>",
                )
        resp = await super()._forward(request)
        if self.hold and action in ("ChangeResourceRecordSets", "GetChange"):
            resp.body = resp.body.replace(b"INSYNC", b"PENDING")
        return resp


@dataclass
class R53:
    env: Env
    proxy: Route53Proxy
    zone: str  # account A's zone (the manager's own)
    zone_b: str  # account B's zone (reached through ROLE_B)
    config_b: AwsConfig
    tg_arns: dict[str, str] = field(default_factory=dict)
    dns: dict[str, str] = field(default_factory=dict)  # target group name -> its ALB's DNS name

    async def version(self, name: str, version: str, labels: dict[str, str]) -> None:
        """A target group behind a load balancer of its own (one per cluster), with a
        healthy target, and its AWSTargetGroup."""
        e = self.env
        short = f"{name}-{e.namespace[-6:]}"[:32]
        arn = await e.aws.target_group(short, e.network)
        await e.aws.register_targets(arn, await e.aws.instances(1, e.network))
        lb = await e.aws.alb(short, e.network)
        async with e.aws.config.client("elbv2") as elb:
            await elb.create_listener(
                LoadBalancerArn=lb.arn,
                Protocol="HTTP",
                Port=8080,
                DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}],
            )
        await e.client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": name,
                    "namespace": e.namespace,
                    "labels": {VERSION_LABEL: version, **labels},
                },
                "spec": {"arn": arn},
            }
        )
        self.tg_arns[name] = arn
        self.dns[name] = lb.dns_name

    async def records(self, name: str, zone: str | None = None) -> dict[str, int]:
        """The weighted A records of `name`, by SetIdentifier (ListResourceRecordSets)."""
        config = self.env.aws.config if zone in (None, self.zone) else self.config_b
        return await weighted_records(config, zone or self.zone, name)

    async def records_become(
        self, name: str, want: dict[str, int], zone: str | None = None
    ) -> None:
        async def same() -> bool:
            return await self.records(name, zone) == want

        assert await eventually(same, within=60), (await self.records(name, zone), want)

    async def edit_by_hand(self, name: str, set_identifier: str, weight: int) -> None:
        """What someone with the console does: one record's weight changed in place."""
        async with self.env.aws.config.client("route53") as r53:
            out = await r53.list_resource_record_sets(
                HostedZoneId=self.zone, StartRecordName=name, StartRecordType="A"
            )
            rec = next(
                r for r in out["ResourceRecordSets"] if r.get("SetIdentifier") == set_identifier
            )
            await r53.change_resource_record_sets(
                HostedZoneId=self.zone,
                ChangeBatch={
                    "Changes": [
                        {"Action": "UPSERT", "ResourceRecordSet": {**rec, "Weight": weight}}
                    ]
                },
            )


async def hosted_zone(config: AwsConfig, name: str) -> str:
    async with config.client("route53") as r53:
        out = await r53.create_hosted_zone(Name=name, CallerReference=name)
    return str(out["HostedZone"]["Id"]).rsplit("/", 1)[-1]


@pytest.fixture
async def r53(
    moto: MotoServer, rt_client: Client, namespace: str, okra_crds: list[str]
) -> AsyncIterator[R53]:
    proxy = Route53Proxy(moto.endpoint_url)
    await proxy.start()
    seed = Seeder(moto.config)
    network = await seed.network()
    alb = await seed.alb(f"web-{namespace[-8:]}", network)
    suffix = namespace[-8:]
    zone = await hosted_zone(moto.config, f"a-{suffix}.example.test")
    config_b = AwsConfig(
        region=moto.region,
        endpoint_url=moto.endpoint_url,
        access_key_id="testing",
        secret_access_key="testing",
        role_arn=ROLE_B,
    )
    zone_b = await hosted_zone(config_b, f"b-{suffix}.example.test")
    proxy.denied_role = WRONG_ROLE
    env = Env(rt_client, seed, namespace, network, alb, proxy)
    yield R53(env, proxy, zone, zone_b, config_b)
    await proxy.stop()
    policy = iampolicy.load()
    denied = sorted({a for a in proxy.actions() if not iampolicy.operation_allowed(policy, a)})
    assert not denied, f"okra-manager called AWS actions config/iam/policy.json lacks: {denied}"


def r53_cell(
    ns: str, name: str, zone: str, record: str, steps: list[dict[str, Any]], **ingress: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "ingress": {
                "type": "AWSRoute53",
                "awsRoute53": {
                    "hostedZoneID": zone,
                    "recordName": record,
                    "targetGroupSelector": {"matchLabels": {"cell": name}},
                    **ingress,
                },
            },
            "updateStrategy": {"type": "Canary", "canary": {"steps": steps}},
        },
    }


async def status_of(c: Client, ns: str, gvk: GVK, name: str) -> dict[str, Any]:
    return (await c.get(gvk, name, ns)).get("status") or {}


async def wait_for(
    c: Client, ns: str, gvk: GVK, name: str, pred: Any, within: float = 90
) -> dict[str, Any]:
    last: dict[str, Any] = {}

    async def ok() -> bool:
        nonlocal last
        try:
            last = await status_of(c, ns, gvk, name)
        except NotFoundError:  # not made yet; any other refusal fails the test
            return False
        return bool(pred(last))

    assert await eventually(ok, within=within), last
    return last


def synced(st: dict[str, Any]) -> bool:
    return any(c["type"] == "Synced" and c["status"] == "True" for c in st.get("conditions") or [])


async def test_route53_weighted_records_through_a_canary_drift_a_crash_and_an_assumed_role(
    r53: R53,
    control_plane: ControlPlane,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    tmp_path: Path,
) -> None:
    c, ns = rt_client, namespace
    await c.create(error_rate_template(ns, metrics.url))
    suffix = ns[-8:]
    web_name, edge_name, wrong_name = (
        f"web.a-{suffix}.example.test",
        f"edge.b-{suffix}.example.test",
        f"wrong.b-{suffix}.example.test",
    )
    okra = OkraManager(
        control_plane, r53.env, tmp_path / "okra-manager.log", args=["--drift-check-period", "1"]
    )
    okra.start()
    try:
        # Account B's zone through an assumed role, and a role that refuses okra.
        await r53.version("edge-v1", "v1", {"cell": "edge"})
        await r53.version("wrong-v1", "v1", {"cell": "wrong"})
        await c.create(r53_cell(ns, "edge", r53.zone_b, edge_name, [], roleARN=ROLE_B))
        await c.create(r53_cell(ns, "wrong", r53.zone_b, wrong_name, [], roleARN=WRONG_ROLE))

        # A shared ALB in account B, reached through the role as well.
        seed_b = Seeder(r53.config_b)
        network_b = await seed_b.network()
        alb_b = await seed_b.alb(f"shared-{suffix}", network_b)
        shared_tg = await seed_b.target_group(f"shared-v1-{suffix}", network_b)
        await seed_b.register_targets(shared_tg, await seed_b.instances(1, network_b))
        await c.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": "shared-v1",
                    "namespace": ns,
                    "labels": {VERSION_LABEL: "v1", "cell": "shared"},
                },
                "spec": {"arn": shared_tg},
            }
        )
        shared = cell_obj(ns, alb_b.listener_arn, [])
        shared["metadata"]["name"] = "shared"
        alb_section = shared["spec"]["ingress"]["awsApplicationLoadBalancer"]
        alb_section["roleARN"] = ROLE_B
        alb_section["targetGroupSelector"] = {"matchLabels": {"cell": "shared"}}
        await c.create(shared)

        # First rollout: v1 gets everything (v2 has no record: weight 0).
        await r53.version("web-v1", "v1", {"cell": "web"})
        steps: list[dict[str, Any]] = [
            {"setWeight": 20},
            ANALYSIS,
            {"pause": {}},
            {"setWeight": 50},
            {"pause": {}},
        ]
        await c.create(r53_cell(ns, "web", r53.zone, web_name, steps, ttl=TTL))
        await wait_for(c, ns, CELL, "web", lambda s: s.get("health") == "Healthy")
        await r53.records_become(web_name, {"web-v1": 100})
        config = await c.get(R53_CONFIG, "web", ns)
        applied = config["status"]["applied"]["records"]
        assert applied[0]["aliasTarget"]["dnsName"].rstrip(".").lower() == r53.dns["web-v1"].lower()

        # v2: 20, then the analysis, which starts only once the 20 is in effect.
        await r53.version("web-v2", "v2", {"cell": "web"})
        await wait_for(c, ns, CELL, "web", lambda s: s.get("health") == "Paused", within=120)
        await r53.records_become(web_name, {"web-v1": 80, "web-v2": 20})
        config = await c.get(R53_CONFIG, "web", ns)
        st = config["status"]
        in_sync, effective = parse_time(st["inSyncAt"]), parse_time(st["effectiveAt"])
        assert in_sync is not None
        assert effective is not None
        assert effective - in_sync == datetime.timedelta(seconds=TTL)
        runs = (await c.list(RUN, ns)).items
        assert len(runs) == 1, runs
        started = parse_time(runs[0]["metadata"]["creationTimestamp"])
        assert started is not None
        assert started >= effective, (started, st)

        # 50, then 100 (promoted past the last pause): v1's record leaves the name.
        await promote(c, ns)
        await wait_for(
            c,
            ns,
            CELL,
            "web",
            lambda s: s.get("health") == "Paused" and s.get("canaryWeight") == 50,
        )
        await r53.records_become(web_name, {"web-v1": 50, "web-v2": 50})
        # okra get cell and okra plan read the Route 53 config and the records themselves.
        code, out, err = await okra_cli(control_plane, r53.env, "get", "cell", "web")
        assert code == 0, err
        assert "AWSRoute53RecordSetConfig web: Synced" in out, out
        code, out, err = await okra_cli(control_plane, r53.env, "plan", "web", "-o", "json")
        assert code == 0, err
        plan = json.loads(out)
        assert plan["aws"]["recordName"] == web_name
        assert {f["name"]: f["weight"] for f in plan["aws"]["forward"]} == {
            "web-v1": 50,
            "web-v2": 50,
        }
        assert plan["aws"]["matchesConfig"] is True
        planned = [
            {w["name"]: w["weight"] for w in st["writes"]} for st in plan["stages"] if st["writes"]
        ]
        assert planned == [{"web-v2": 100}]
        await promote(c, ns)
        await wait_for(
            c,
            ns,
            CELL,
            "web",
            lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2",
        )
        await r53.records_become(web_name, {"web-v2": 100})

        # The assumed role reached account B's zone and its ALB; the wrong one wrote nothing.
        await r53.records_become(edge_name, {"edge-v1": 100}, zone=r53.zone_b)
        await wait_for(c, ns, CELL, "shared", lambda s: s.get("health") == "Healthy")

        async def shared_rule() -> list[dict[str, Any]]:
            async with r53.config_b.client("elbv2") as elb:
                rules = (await elb.describe_rules(ListenerArn=alb_b.listener_arn))["Rules"]
            return [
                t
                for r in rules
                if not r.get("IsDefault")
                for a in r["Actions"]
                if a["Type"] == "forward"
                for t in a["ForwardConfig"]["TargetGroups"]
            ]

        assert [(t["TargetGroupArn"], t["Weight"]) for t in await shared_rule()] == [
            (shared_tg, 100)
        ]
        wrong = await wait_for(
            c,
            ns,
            R53_CONFIG,
            "wrong",
            lambda s: any(x["reason"] == "AWSError" for x in s.get("conditions") or []),
        )
        message = next(x["message"] for x in wrong["conditions"] if x["type"] == "Synced")
        assert "cannot assume the role in spec.roleARN" in message, message
        assert "AccessDenied" in message, message
        cell = await wait_for(
            c, ns, CELL, "wrong", lambda s: "cannot assume the role" in (s.get("message") or "")
        )
        assert cell.get("stableVersion") in (None, "v1")
        assert await r53.records(wrong_name, zone=r53.zone_b) == {}
        assert ROLE_B not in okra.text()
        assert WRONG_ROLE not in okra.text()

        # A record edited by hand is restored, with an Event.
        await r53.edit_by_hand(web_name, "web-v2", 7)
        await r53.records_become(web_name, {"web-v2": 100})
        events = await wait_events(c, ns, "DriftRepaired", "web")
        assert "web-v2=7" in events[0]["note"], events[0]

        # v3 fails its analysis: all weight back to v2, v3 blocked.
        metrics.rates["v3"] = 0.5
        await r53.version("web-v3", "v3", {"cell": "web"})
        st = await wait_for(c, ns, CELL, "web", lambda s: s.get("health") == "Degraded", within=120)
        assert "version v3 failed" in st["message"]
        await r53.records_become(web_name, {"web-v2": 100})
        # Once the rollback's records are in effect (past the time the config named), the
        # Cell, read back from the API server, no longer says they are not.
        st = await wait_for(
            c,
            ns,
            CELL,
            "web",
            lambda s: "not yet in effect" not in (s.get("message") or ""),
            within=60,
        )
        assert "version v3 failed" in st["message"]
        assert st["health"] == "Degraded"
        blocked = await c.get(BLOCKLIST, "web", ns)
        assert [i["version"] for i in blocked["spec"]["items"]] == ["v3"]

        # Killed while Route 53 says PENDING: the restart polls GetChange, writes nothing.
        r53.proxy.hold = True
        await c.patch(CELL, "web", {"spec": {"version": "v1"}}, namespace=ns)  # a rollback
        pending = await wait_for(c, ns, R53_CONFIG, "web", lambda s: s.get("pendingChange"))
        okra.kill()
        writes = r53.proxy.actions().count("ChangeResourceRecordSets")
        okra.start()

        async def polled() -> bool:
            return r53.proxy.actions().count("GetChange") >= 2

        assert await eventually(polled, within=60)
        assert r53.proxy.actions().count("ChangeResourceRecordSets") == writes
        r53.proxy.hold = False
        done = await wait_for(
            c, ns, R53_CONFIG, "web", lambda s: synced(s) and not s.get("pendingChange")
        )
        insync, submitted = done["inSyncAt"], pending["pendingChange"]["submittedAt"]
        assert insync >= submitted, (insync, submitted)  # RFC 3339 UTC, to the second
        await r53.records_become(web_name, {"web-v1": 100})
        # The pending change is never written again. A later generation of the config (the
        # Cell may write the rollback's records in two steps, the second while the first is
        # PENDING on a busy machine) is written once each, after INSYNC.
        later = (await c.get(R53_CONFIG, "web", ns))["metadata"]["generation"] - pending[
            "pendingChange"
        ]["generation"]
        after = r53.proxy.actions().count("ChangeResourceRecordSets") - writes
        changes = [line for line in okra.text().splitlines() if "in one batch" in line]
        assert after <= later, (after, later, changes[-3:])
        assert not okra.error_lines(), okra.last_lines()
    finally:
        okra.stop()
