"""Requests an ALB would count, published to moto's CloudWatch as the ALB publishes them.

moto routes no request, so `RequestFeeder` plays the ALBs' part for traffic confirmation:
every `period` seconds it reads the weights as AWS shows them — the listener's weighted
rule (`listener_arn`), or the weighted records of a Route 53 name (`records`: zone and
name, each record's SetIdentifier mapped to its target group by `endpoints`, each
target group at the ALB it is attached to) — splits `rate` requests a second over the
target groups by those weights, and puts `RequestCount` in `AWS/ApplicationELB` with the
`LoadBalancer` and `TargetGroup` dimensions, skipping zero counts (an ALB publishes only
nonzero values). `served` skews it: a target group's factor (0: it gets none, its share
goes nowhere, as when a rule shadows it or clients never reach it). `rate` and `served`
may change while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.aws.cloudwatch import METRIC, NAMESPACE, dimension
from okra_controllers.aws.config import AwsConfig


@dataclass
class RequestFeeder:
    aws: AwsConfig
    listener_arn: str = ""
    rate: float = 50.0  # requests a second through the rule, all target groups together
    served: Mapping[str, float] = field(default_factory=dict)  # target group ARN -> factor
    period: float = 0.5
    records: tuple[str, str] | None = None  # (hosted zone ID, record name): weighted records
    endpoints: Mapping[str, str] = field(default_factory=dict)  # SetIdentifier -> TG ARN
    published: dict[str, float] = field(default_factory=dict)  # ARN -> requests put so far
    _carry: dict[str, float] = field(default_factory=dict)
    _lbs: dict[str, str] = field(default_factory=dict)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    async def weights(self, elb: Any) -> dict[str, int]:
        """Target group ARN -> weight as AWS shows it (the rule, or the records)."""
        if self.records is not None:
            return await self._record_weights()
        rules = (await elb.describe_rules(ListenerArn=self.listener_arn))["Rules"]
        for r in sorted(rules, key=lambda r: (r.get("IsDefault", False), r.get("Priority"))):
            if r.get("IsDefault"):
                continue
            for a in r.get("Actions", []):
                if a.get("Type") == "forward" and "ForwardConfig" in a:
                    return {
                        t["TargetGroupArn"]: int(t.get("Weight", 1))
                        for t in a["ForwardConfig"]["TargetGroups"]
                    }
        return {}

    async def _record_weights(self) -> dict[str, int]:
        assert self.records is not None
        zone, name = self.records
        async with self.aws.client("route53") as r53:
            out = await r53.list_resource_record_sets(HostedZoneId=zone, StartRecordName=name)
        return {
            self.endpoints[r["SetIdentifier"]]: int(r.get("Weight", 0))
            for r in out["ResourceRecordSets"]
            if r["Name"].rstrip(".") == name.rstrip(".")
            and r.get("SetIdentifier") in self.endpoints
        }

    async def load_balancer(self, elb: Any, tg_arn: str) -> str:
        """The ALB a target group is counted at: the listener's, or the one it is attached to."""
        if self.records is None:
            return dimension(self.listener_arn, "app/")
        if tg_arn not in self._lbs:
            groups = await elb.describe_target_groups(TargetGroupArns=[tg_arn])
            self._lbs[tg_arn] = dimension(groups["TargetGroups"][0]["LoadBalancerArns"][0], "app/")
        return self._lbs[tg_arn]

    async def publish(
        self,
        elb: Any,
        cw: Any,
        weights: dict[str, int],
        stamp: datetime.datetime,
        seconds: float,
    ) -> None:
        """Publish the requests of `seconds` from `stamp` on, split by `weights` (read at
        `stamp`)."""
        total = sum(weights.values())
        if not total:
            return
        data: list[dict[str, Any]] = []
        counted: dict[str, float] = {}
        for arn, w in sorted(weights.items()):
            n = self.rate * seconds * w / total * self.served.get(arn, 1.0) + self._carry.get(
                arn, 0
            )
            whole = int(n)
            self._carry[arn] = n - whole
            if whole <= 0:
                continue
            counted[arn] = float(whole)
            data.append(
                {
                    "MetricName": METRIC,
                    "Dimensions": [
                        {"Name": "LoadBalancer", "Value": await self.load_balancer(elb, arn)},
                        {"Name": "TargetGroup", "Value": dimension(arn, "targetgroup/")},
                    ],
                    "Timestamp": stamp,
                    "Value": float(whole),
                    "Unit": "Count",
                }
            )
        if data:
            await cw.put_metric_data(Namespace=NAMESPACE, MetricData=data)
        for arn, n in counted.items():  # counted once CloudWatch has them
            self.published[arn] = self.published.get(arn, 0.0) + n

    async def _run(self) -> None:
        """Blocks of requests, each split by the weights read at its start and stamped with
        the time the read began: a block that spans a weight change is stamped before it, so
        a reading from the change on never counts requests served at the old weights (on a
        busy machine a block can last seconds)."""
        async with self.aws.client("elbv2") as elb, self.aws.client("cloudwatch") as cw:
            loop = asyncio.get_running_loop()
            while True:
                stamp, started = datetime.datetime.now(datetime.UTC), loop.time()
                weights = await self.weights(elb)
                if not self._stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), self.period)
                await self.publish(elb, cw, weights, stamp, loop.time() - started)
                if self._stop.is_set():
                    return

    async def __aenter__(self) -> RequestFeeder:
        self._stop.clear()
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Stops after the tick under way (its requests published and counted), so that
        `published` is exactly what CloudWatch holds."""
        if self._task is not None:
            self._stop.set()
            await self._task
