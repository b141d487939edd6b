"""The requests each target group served, as its load balancer published them to
CloudWatch: one batched GetMetricData per reading.

An ALB publishes `RequestCount` in `AWS/ApplicationELB` once a minute, per load
balancer and target group (dimensions `LoadBalancer=app/<name>/<id>` and
`TargetGroup=targetgroup/<name>/<id>`, the ARNs' last parts), and only when the count is
not zero: a target group with no data point served no request. CloudWatch answers only
for the exact set of dimensions published, so both are given.

An NLB publishes flows, not requests, and per load balancer (`NewFlowCount` in
`AWS/NetworkELB`, dimension `LoadBalancer=net/<name>/<id>`): a target group's share can
be told only when it is the only one of the reading behind its NLB (each cluster with a
load balancer of its own, behind Route 53 records). docs/traffic.md has the research.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from okra_controllers.aws.config import AwsConfig

NAMESPACE = "AWS/ApplicationELB"
METRIC = "RequestCount"
NLB_NAMESPACE = "AWS/NetworkELB"
NLB_METRIC = "NewFlowCount"
PERIOD = 60  # seconds: load balancer metrics are one-minute data points
MAX_QUERIES = 500  # GetMetricData's limit per call


def dimension(arn: str, marker: str) -> str:
    """The CloudWatch dimension value of an ELB ARN: the part from `marker` on
    (`app/web/50dc6c495c0c9188` of a listener's or load balancer's ARN with marker
    `app/`; `targetgroup/web/73e2d6bc24d8a067` of a target group's)."""
    resource = arn.split(":", 5)[-1]
    at = resource.find(marker)
    if at < 0:
        raise ValueError(f"{arn!r} has no {marker!r} part")
    parts = resource[at:].split("/")
    return "/".join(parts[:3])


def _query(tg_arn: str, endpoint: str) -> dict[str, Any]:
    """The metric that counts what `tg_arn` served behind `endpoint` (the ARN of its load
    balancer or of a listener on it)."""
    resource = endpoint.split(":", 5)[-1]
    if "/net/" in f"/{resource}":
        return {
            "Namespace": NLB_NAMESPACE,
            "MetricName": NLB_METRIC,
            "Dimensions": [{"Name": "LoadBalancer", "Value": dimension(endpoint, "net/")}],
        }
    return {
        "Namespace": NAMESPACE,
        "MetricName": METRIC,
        "Dimensions": [
            {"Name": "LoadBalancer", "Value": dimension(endpoint, "app/")},
            {"Name": "TargetGroup", "Value": dimension(tg_arn, "targetgroup/")},
        ],
    }


def _shared_nlbs(endpoints: Mapping[str, str]) -> None:
    """Refuse a reading where two target groups share an NLB: its flows are one count."""
    seen: dict[str, str] = {}
    for tg, lb in sorted(endpoints.items()):
        if "/net/" not in f"/{lb.split(':', 5)[-1]}":
            continue
        key = dimension(lb, "net/")
        if key in seen:
            raise ValueError(
                f"target groups {seen[key]} and {tg} are behind one NLB ({key}), whose flow "
                "count (NewFlowCount) is per load balancer: their traffic cannot be told apart"
            )
        seen[key] = tg


async def requests_served(
    aws: AwsConfig,
    endpoints: Mapping[str, str],
    start: datetime.datetime,
    end: datetime.datetime,
) -> dict[str, float]:
    """Target group ARN -> requests (flows, behind an NLB) it served in [start, end)
    behind its load balancer (`endpoints`: target group ARN -> the ARN of its load
    balancer or of a listener on it); 0 for a target group with no data point."""
    _shared_nlbs(endpoints)
    arns = sorted(endpoints)
    out = dict.fromkeys(arns, 0.0)
    async with aws.client("cloudwatch") as cw:
        for first in range(0, len(arns), MAX_QUERIES):
            batch = arns[first : first + MAX_QUERIES]
            queries: list[dict[str, Any]] = [
                {
                    "Id": f"tg{i}",
                    "MetricStat": {
                        "Metric": _query(a, endpoints[a]),
                        "Period": PERIOD,
                        "Stat": "Sum",
                    },
                    "ReturnData": True,
                }
                for i, a in enumerate(batch)
            ]
            token: str | None = None
            while True:
                kwargs: dict[str, Any] = {
                    "StartTime": start,
                    "EndTime": end,
                    "MetricDataQueries": queries,
                }
                if token:
                    kwargs["NextToken"] = token
                answer = await cw.get_metric_data(**kwargs)
                for r in answer.get("MetricDataResults", []):
                    arn = batch[int(r["Id"][2:])]
                    out[arn] += float(sum(r.get("Values") or []))
                token = answer.get("NextToken")
                if not token:
                    break
    return out
