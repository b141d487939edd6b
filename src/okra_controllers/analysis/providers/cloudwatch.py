"""The CloudWatch provider: one GetMetricData call over the last `interval` (default 5m).

Why it looks like this: Argo Rollouts hands the whole list of MetricDataResults to the
conditions (`metricproviders/cloudwatch/cloudwatch.go`), so templates read `result[0].Values`
and the like; okra gives the same list, with the field names AWS uses (Id, Label, Timestamps,
Values, StatusCode, Messages). The stored value string is Go's `%+v` of each result's Values
("[[0.5 1]]"), and CloudWatch's messages, if any, are recorded as `messages` metadata. Calls go
through aiobotocore with okra's AwsConfig, so tests reach a moto server as production reaches
AWS.
"""

from __future__ import annotations

import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.analysis.providers.base import (
    ProviderContext,
    ProviderError,
    ProviderResult,
    go_sprint_float,
)
from okra_controllers.api.v1alpha1.providers import CloudWatchMetric, CloudWatchMetricDataQuery

__all__ = ["PROVIDER", "CloudWatchProvider", "metric_data_queries"]

DEFAULT_INTERVAL = 300.0


class CloudWatchProvider:
    kind = "cloudwatch"

    async def measure(self, spec: CloudWatchMetric, ctx: ProviderContext) -> ProviderResult:
        interval = DEFAULT_INTERVAL
        if spec.interval:
            try:
                interval = parse_duration(spec.interval)
            except ValueError as e:
                raise ProviderError(f"cloudwatch: interval: {e}") from None
        end = datetime.datetime.now(datetime.UTC)
        start = end - datetime.timedelta(seconds=interval)
        queries = metric_data_queries(spec.metric_data_queries)
        try:
            async with ctx.aws.client("cloudwatch") as cw:
                answer = await cw.get_metric_data(
                    StartTime=start, EndTime=end, MetricDataQueries=queries
                )
        except (BotoCoreError, ClientError, ValueError) as e:
            raise ProviderError(f"cloudwatch GetMetricData in {ctx.aws.region}: {e}") from None
        results: list[dict[str, Any]] = [
            {k: v for k, v in r.items() if k != "ResponseMetadata"}
            for r in answer.get("MetricDataResults", [])
        ]
        for r in results:
            r["Values"] = [float(v) for v in r.get("Values", [])]
        display = "[" + " ".join(_values(r["Values"]) for r in results) + "]"
        messages = answer.get("Messages") or []
        metadata = (
            {"messages": "[" + " ".join(_message(m) for m in messages) + "]"} if messages else {}
        )
        return ProviderResult(results, display, metadata)

    async def samples(
        self,
        spec: CloudWatchMetric,
        ctx: ProviderContext,
        start: datetime.datetime,
        end: datetime.datetime,
        target_groups: list[str],
    ) -> list[float]:
        """Every value GetMetricData returns from `start` to `end` for the queries that
        return data, asked once per target group of `target_groups` (ARNs) and load balancer
        it serves, with the dimensions the ALB publishes per target group (`LoadBalancer`
        and `TargetGroup`, from DescribeTargetGroups) added to each `metricStat` that has
        no `TargetGroup` dimension (metric math over them then works per target group
        too): the canary judge's sample of one side."""
        queries = metric_data_queries(spec.metric_data_queries)
        returned = {q["Id"] for q in queries if q.get("ReturnData", True)}
        values: list[float] = []
        try:
            dimension_sets = await _target_group_dimensions(ctx, target_groups)
            calls = [_with_dimensions(queries, dims) for dims in dimension_sets]
            async with ctx.aws.client("cloudwatch") as cw:
                for call in calls:
                    token: str | None = None
                    while True:
                        extra = {"NextToken": token} if token else {}
                        answer = await cw.get_metric_data(
                            StartTime=start, EndTime=end, MetricDataQueries=call, **extra
                        )
                        for r in answer.get("MetricDataResults", []):
                            if r.get("Id") in returned:
                                values.extend(float(v) for v in r.get("Values", []))
                        token = answer.get("NextToken")
                        if not token:
                            break
        except (BotoCoreError, ClientError, ValueError) as e:
            raise ProviderError(f"cloudwatch GetMetricData in {ctx.aws.region}: {e}") from None
        return values


TARGET_GROUP = "TargetGroup"


LOAD_BALANCER = "LoadBalancer"
_DESCRIBE_BATCH = 20  # TargetGroupArns per DescribeTargetGroups call (at most 20 with no paging)


def _tg_dimension(arn: str) -> dict[str, str]:
    """CloudWatch's TargetGroup dimension of a target group ARN: `targetgroup/NAME/ID`."""
    return {"Name": TARGET_GROUP, "Value": arn.rsplit(":", 1)[-1]}


def _lb_dimension(arn: str) -> dict[str, str]:
    """CloudWatch's LoadBalancer dimension of a load balancer ARN: `app/NAME/ID`."""
    return {"Name": LOAD_BALANCER, "Value": arn.split(":loadbalancer/", 1)[-1]}


async def _target_group_dimensions(
    ctx: ProviderContext, target_groups: list[str]
) -> list[list[dict[str, str]]]:
    """One dimension set per (target group, load balancer it serves): `LoadBalancer` and
    `TargetGroup`, as the ALB publishes TargetResponseTime, RequestCount and the
    HTTPCode_Target_* counts (CloudWatch matches dimension sets exactly: `TargetGroup`
    alone finds none of them). A target group no load balancer uses has `TargetGroup`
    alone. No target groups: a single set, empty (the queries as written)."""
    if not target_groups:
        return [[]]
    balancers: dict[str, list[str]] = {}
    async with ctx.aws.client("elbv2") as elb:
        for i in range(0, len(target_groups), _DESCRIBE_BATCH):
            answer = await elb.describe_target_groups(
                TargetGroupArns=target_groups[i : i + _DESCRIBE_BATCH]
            )
            for tg in answer.get("TargetGroups", []):
                balancers[tg["TargetGroupArn"]] = list(tg.get("LoadBalancerArns") or [])
    out: list[list[dict[str, str]]] = []
    for arn in target_groups:
        lbs = balancers.get(arn) or []
        out += [[_lb_dimension(lb), _tg_dimension(arn)] for lb in lbs] or [[_tg_dimension(arn)]]
    return out


def _with_dimensions(
    queries: list[dict[str, Any]], dims: list[dict[str, str]]
) -> list[dict[str, Any]]:
    """`queries` with `dims` added to each metricStat that names no `TargetGroup` itself
    (a dimension the metricStat already has keeps its value)."""
    if not dims:
        return queries
    out = []
    for q in queries:
        stat = q.get("MetricStat")
        have = stat["Metric"].get("Dimensions") or [] if stat is not None else []
        if stat is None or any(d["Name"] == TARGET_GROUP for d in have):
            out.append(q)
            continue
        names = {d["Name"] for d in have}
        merged = [*have, *(d for d in dims if d["Name"] not in names)]
        out.append(
            {**q, "MetricStat": {**stat, "Metric": {**stat["Metric"], "Dimensions": merged}}}
        )
    return out


def _values(values: list[float]) -> str:
    return "[" + " ".join(go_sprint_float(v) for v in values) + "]"


def _message(message: dict[str, Any]) -> str:
    return f"{{Code:{message.get('Code', '')} Value:{message.get('Value', '')}}}"


def _int(value: int | str | None) -> int:
    """An int-or-string as Go's IntOrString.IntValue() reads it (unparsable: 0)."""
    if isinstance(value, int):
        return value
    try:
        return int(value or 0)
    except ValueError:
        return 0


def metric_data_queries(queries: list[CloudWatchMetricDataQuery]) -> list[dict[str, Any]]:
    """The template's queries in GetMetricData's shape (Argo's convertType)."""
    out: list[dict[str, Any]] = []
    for q in queries:
        item: dict[str, Any] = {"Id": q.id or ""}
        if q.expression is not None:
            item["Expression"] = q.expression
        if q.label is not None:
            item["Label"] = q.label
        if q.metric_stat is not None:
            stat = q.metric_stat
            metric = stat.metric
            metric_out: dict[str, Any] = {
                "MetricName": (metric.metric_name if metric else "") or ""
            }
            if metric is not None and metric.namespace is not None:
                metric_out["Namespace"] = metric.namespace
            if metric is not None and metric.dimensions is not None:
                metric_out["Dimensions"] = [
                    {"Name": d.name or "", "Value": d.value or ""} for d in metric.dimensions
                ]
            stat_out: dict[str, Any] = {
                "Metric": metric_out,
                "Period": _int(stat.period),
                "Stat": stat.stat or "",
            }
            if stat.unit:
                stat_out["Unit"] = stat.unit
            item["MetricStat"] = stat_out
        if q.period is not None:
            item["Period"] = _int(q.period)
        if q.return_data is not None:
            item["ReturnData"] = q.return_data
        out.append(item)
    return out


PROVIDER = CloudWatchProvider()
