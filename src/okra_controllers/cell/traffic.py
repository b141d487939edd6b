"""Traffic confirmation's observe and report sides, around the pure decision
(`cell.plan.traffic`): the reading the plan asks for (one GetMetricData, `read`), and
the observed split as a metric (`report`).

A reading that fails says why (`TrafficReading.problem`): the plan holds the step on
it and never takes it for a pass.
"""

from __future__ import annotations

import contextlib

import structlog
from botocore.exceptions import BotoCoreError, ClientError
from prometheus_client import Gauge

from okra_controllers.api.v1alpha1.cell import CellALB, CellRoute53, RolloutCellStatus
from okra_controllers.aws.cloudwatch import requests_served
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.route53 import load_balancers_of
from okra_controllers.cell.plan.traffic import TrafficQuery, TrafficReading
from okra_controllers.lbconfig import aws_message
from okra_runtime.metrics import REGISTRY

log = structlog.get_logger("okra.cell")

TRAFFIC_SHARE = Gauge(
    "okra_cell_traffic_share",
    "Percent of the requests of the last traffic reading (spec.trafficConfirmation) that a "
    "version's target groups served, beside okra_cell_canary_weight (what AWS shows)",
    ["namespace", "cell", "version"],
    registry=REGISTRY,
)
TRAFFIC_CONFIRMED = Gauge(
    "okra_cell_traffic_confirmed",
    "1 while the Cell's last traffic reading confirms the weights AWS shows, 0 while it "
    "does not (too little traffic, a split off the plan, CloudWatch unreadable)",
    ["namespace", "cell"],
    registry=REGISTRY,
)
_SERIES: dict[tuple[str, str], set[str]] = {}  # the versions each Cell has a share series for


async def read(aws: AwsConfig, lb: CellALB | CellRoute53, q: TrafficQuery) -> TrafficReading:
    """What each target group served over the query's window (CloudWatch): behind an
    ALB's listener, each by its `RequestCount` there; behind Route 53 records, each at the
    load balancer it is attached to (one DescribeTargetGroups and DescribeLoadBalancers
    first), since each record's endpoint is that load balancer."""
    try:
        if isinstance(lb, CellALB):
            endpoints = dict.fromkeys(q.arns, lb.listener_arn)
        else:
            attached = await load_balancers_of(aws, q.arns)
            missing = sorted(set(q.arns) - set(attached))
            if missing:
                raise ValueError(
                    f"target group {missing[0]} is attached to no load balancer, so no "
                    "metric says what it served"
                )
            endpoints = {arn: attached[arn].arn for arn in q.arns}
        served = await requests_served(aws, endpoints, q.start, q.end)
    except (ClientError, BotoCoreError, ValueError) as e:
        why = aws_message(e) if isinstance(e, ClientError | BotoCoreError) else str(e)
        log.warning("traffic unavailable", error=why)
        return TrafficReading(q.start, q.end, problem=why)
    return TrafficReading(q.start, q.end, served)


def report(namespace: str, name: str, status: RolloutCellStatus | None) -> None:
    """The observed split of the Cell's last reading (no series once it has none)."""
    key = (namespace, name)
    traffic = status.traffic if status is not None else None
    shares = {
        v.version: v.observed
        for v in (traffic.versions if traffic is not None else [])
        if v.observed is not None
    }
    for version in _SERIES.pop(key, set()) - set(shares):
        with contextlib.suppress(KeyError):
            TRAFFIC_SHARE.remove(namespace, name, version)
    for version, share in shares.items():
        TRAFFIC_SHARE.labels(namespace, name, version).set(share)
    if shares:
        _SERIES[key] = set(shares)
    if traffic is None:
        with contextlib.suppress(KeyError):
            TRAFFIC_CONFIRMED.remove(namespace, name)
        return
    TRAFFIC_CONFIRMED.labels(namespace, name).set(int(traffic.verdict == "Confirmed"))
