"""What a system Cell makes for one application, as objects to apply: its Cell (a
single-application Cell, pinned to the version of the cluster set it is going to), an
AWSTargetGroup per cluster and version, and its Checks (one per cluster when the rendered
queries differ, one shared otherwise, each with its `analysis-hash`)."""

from __future__ import annotations

import copy
import hashlib
import json
import math
from typing import Any

from pydantic import ValidationError

from okra_controllers.analysis.check_controller import HASH_ANNOTATION
from okra_controllers.api.kinds import CELL, CHECK, TARGET_GROUP
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_controllers.api.v1alpha1.system import (
    SystemApplication,
    SystemArgoCD,
    SystemCheck,
    SystemCluster,
)
from okra_controllers.cell.observe import ABORT, PAUSED, PROMOTE
from okra_controllers.cell.system.model import ChildSeen, Obj, SystemObserved
from okra_controllers.cell.system.names import (
    APP_LABEL,
    CHECK_LABEL,
    SPEC_HASH,
    SYSTEM_LABEL,
    child_name,
    dns,
    member_key,
    version_key,
)
from okra_controllers.templating import Syntax, TemplateError, render

_VARS = Syntax(roots=frozenset({"Vars"}))
_QUERY_PROVIDERS = ("prometheus", "datadog")


def labels(o: SystemObserved, app: str) -> dict[str, str]:
    return {SYSTEM_LABEL: o.name, APP_LABEL: app}


def steps(app: SystemApplication) -> list[dict[str, Any]]:
    """`stepWeight` of `totalWeight` as canary steps; with checks, each step waits for them
    (a pause the system Cell promotes once every check has passed since the step began)."""
    if app.traffic is None:
        return []
    s, total = app.traffic.update_strategy.step_weight, app.traffic.update_strategy.total_weight
    out: list[dict[str, Any]] = []
    for k in range(1, math.ceil(total / s) + 1):
        out.append({"setWeight": round(min(k * s, total) * 100 / total)})
        if app.checks:
            out.append({"pause": {}})
    return out


def child_cell(
    o: SystemObserved,
    app: SystemApplication,
    version: str,
    replicas: int,
    annotations: dict[str, str],
) -> Obj:
    """The application's Cell: the system's clusters of `version` are its target groups
    (and Argo CD clusters), selected by the labels the system puts on them; its ingress is
    the application's load balancer (an ALB rule, an NLB listener, Route 53 records)."""
    spec: dict[str, Any] = {
        "version": version,
        "replicas": max(replicas, 1),
        "versionLabels": [version_key(o.name, app.name)],
        "updateStrategy": {"type": "Canary", "canary": {"steps": steps(app)}},
    }
    ingress = _ingress(o, app)
    if ingress is not None:
        spec["ingress"] = ingress
    if app.traffic is not None and app.traffic_confirmation is not None:
        spec["trafficConfirmation"] = app.traffic_confirmation.model_dump(
            by_alias=True, mode="json"
        )
    if app.argocd is not None:
        spec["argocd"] = argocd_spec(o, app.name, app.argocd)
    for key, checks in (("prechecks", app.prechecks), ("postchecks", app.postchecks)):
        if checks:
            spec[key] = [
                c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in checks
            ]
    policy = app.failure_policy or o.spec.failure_policy
    if policy is not None:
        spec["failurePolicy"] = policy.model_dump(by_alias=True, mode="json")
    if o.spec.progress_deadline_seconds is not None:
        spec["progressDeadlineSeconds"] = o.spec.progress_deadline_seconds
    if o.spec.progress_deadline_abort:
        spec["progressDeadlineAbort"] = True
    spec["rollbackDelaySeconds"] = o.spec.rollback_delay_seconds
    return {
        "apiVersion": API_VERSION,
        "kind": CELL.kind,
        "metadata": {
            "name": child_name(o.name, app.name),
            "namespace": o.namespace,
            "labels": labels(o, app.name),
            "annotations": annotations,
        },
        "spec": spec,
    }


def _ingress(o: SystemObserved, app: SystemApplication) -> Obj | None:
    """The application Cell's ingress: the application's ALB rule, NLB listener or Route 53
    records, its target groups selected by the labels the system puts on them."""
    if app.alb is not None:
        rule = app.alb.forward_config.model_dump(
            by_alias=True, exclude_none=True, exclude={"target_group"}, mode="json"
        )
        if not app.alb.forward_config.has_condition():
            # a priority only: the rule takes every request that reaches it
            rule["pathPatterns"] = ["/*"]
        alb: dict[str, Any] = {
            "listenerARN": app.alb.listener_arn,
            "listenerRule": rule,
            "targetGroupSelector": {"matchLabels": labels(o, app.name)},
        }
        if app.alb.role_arn:
            alb["roleARN"] = app.alb.role_arn
        return {"type": "AWSApplicationLoadBalancer", "awsApplicationLoadBalancer": alb}
    for kind, key, lb in (
        ("AWSNetworkLoadBalancer", "awsNetworkLoadBalancer", app.nlb),
        ("AWSRoute53", "awsRoute53", app.route53),
    ):
        if lb is not None:
            own = lb.model_dump(
                by_alias=True,
                exclude_none=True,
                exclude={"target_group", "update_strategy"},
                mode="json",
            )
            own["targetGroupSelector"] = {"matchLabels": labels(o, app.name)}
            return {"type": kind, key: own}
    return None


def argocd_spec(o: SystemObserved, app: str, a: SystemArgoCD) -> Obj:
    """The application Cell's `spec.argocd`: the cluster Secrets the system labels as
    members, and the application's ApplicationSet. The system controller reads Argo CD's
    view of an application through the same spec."""
    argocd: dict[str, Any] = {
        "clusterSecret": {
            "selector": {"matchLabels": {member_key(o.name, app): "true"}},
            "labels": dict(a.cluster_secret.labels or {}),
        },
        "updateStrategy": a.update_strategy.model_dump(by_alias=True, mode="json"),
    }
    if a.application_set is not None:
        argocd["applicationSet"] = a.application_set.model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
    return argocd


def kept_cell(o: SystemObserved, app: str, seen: ChildSeen, annotations: dict[str, str]) -> Obj:
    """The application's Cell as the API server holds it (the spec okra last applied, with
    what the server defaulted, and its `SPEC_HASH`), with the holds the system sets now:
    while okra refuses a change of the system's spec, the change does not reach the Cell.
    Its resourceVersion is the apply's precondition: a cache that has not seen a later
    write yet does not put an older spec back."""
    notes = dict(annotations)
    if SPEC_HASH in seen.annotations:
        notes[SPEC_HASH] = seen.annotations[SPEC_HASH]
    meta: Obj = {
        "name": child_name(o.name, app),
        "namespace": o.namespace,
        "labels": labels(o, app),
        "annotations": notes,
    }
    if seen.resource_version:
        meta["resourceVersion"] = seen.resource_version
    return {
        "apiVersion": API_VERSION,
        "kind": CELL.kind,
        "metadata": meta,
        "spec": copy.deepcopy(dict(seen.spec or {})),
    }


def with_spec_hash(cell: Obj) -> Obj:
    """`cell` with the hash of its spec (`SPEC_HASH`) among its annotations, unless it
    carries one already (a Cell kept as the API server holds it keeps the hash it has)."""
    digest = hashlib.sha256(json.dumps(cell["spec"], sort_keys=True).encode()).hexdigest()[:16]
    cell["metadata"].setdefault("annotations", {}).setdefault(SPEC_HASH, digest)
    return cell


def hold_annotations(pause: bool, promote: str | None, abort: str | None) -> dict[str, str]:
    """The annotations the system Cell sets on an application's Cell (the same ones `okra
    pause`, `okra promote` and `okra abort` set); one left out is removed by the apply."""
    out = {}
    if pause:
        out[PAUSED] = "true"
    if promote:
        out[PROMOTE] = promote
    if abort:
        out[ABORT] = abort
    return out


def target_group(o: SystemObserved, app: str, name: str, arn: str, version: str) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": TARGET_GROUP.kind,
        "metadata": {
            "name": name,
            "namespace": o.namespace,
            "labels": {**labels(o, app), version_key(o.name, app): version},
        },
        "spec": {"arn": arn},
    }


def check_objects(
    o: SystemObserved,
    app: SystemApplication,
    clusters: list[SystemCluster],
    arns: dict[str, str],
) -> tuple[list[Obj], str]:
    """The Checks of `app` for `clusters`; or a problem that keeps them from running."""
    out: list[Obj] = []
    for check in app.checks:
        rendered: dict[str, tuple[dict[str, Any], str | None]] = {}
        for c in clusters:
            vars_ = {
                "eksClusterName": c.eks_name,
                "clusterName": c.name,
                "albListenerARN": app.alb.listener_arn if app.alb else "",
                "nlbListenerARN": app.nlb.listener_arn if app.nlb else "",
                "route53RecordName": app.route53.record_name if app.route53 else "",
                "targetGroupARN": arns.get(c.name, ""),
            }
            try:
                provider, query, problem = _provider(check, vars_)
            except TemplateError as e:
                provider, query, problem = {}, None, f"its query: {e}"
            if problem:
                return [], f"check {check.name}: {problem}"
            rendered[c.name] = (provider, query)
        distinct = {json.dumps(p, sort_keys=True) for p in rendered.values()}
        if len(distinct) == 1:
            first = next(iter(rendered.values()))
            out.append(_check(o, app, check, None, *first))
        else:
            out += [_check(o, app, check, c, p, q) for c, (p, q) in rendered.items()]
    return out, ""


def _provider(check: SystemCheck, vars_: dict[str, str]) -> tuple[dict[str, Any], str | None, str]:
    """The Check's provider and query, rendered for one cluster; or a problem. A check with
    no provider has its query rendered alone: the Check runs it on okra-manager's default
    metrics provider (and says what to add when there is none)."""
    a = check.analysis
    query = render(a.query, {"Vars": vars_}, _VARS) if a.query is not None else None
    if a.provider is None:
        if query is None:
            return {}, None, "analysis needs a query (or a provider with its own)"
        return {}, query, ""
    provider = json.loads(json.dumps(a.provider))
    if a.query is not None:
        kinds = [k for k in _QUERY_PROVIDERS if isinstance(provider.get(k), dict)]
        if not kinds:
            return {}, None, "analysis.query goes into a prometheus or datadog provider"
        provider[kinds[0]]["query"] = a.query
    try:
        text = render(json.dumps(provider), {"Vars": vars_}, _VARS, escape="json")
        provider = json.loads(text)
        MetricProvider.model_validate(provider)
    except TemplateError as e:
        return {}, None, f"its query: {e}"
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return {}, None, f"analysis.provider.{where}: {first['msg']}"
    return provider, None, ""


def _check(
    o: SystemObserved,
    app: SystemApplication,
    check: SystemCheck,
    cluster: str | None,
    provider: dict[str, Any],
    query: str | None,
) -> Obj:
    a = check.analysis
    spec: dict[str, Any] = {"interval": a.interval}
    if provider:
        spec["provider"] = provider
    else:  # okra-manager's default provider runs it
        spec["query"] = query
    for key, value in (
        ("successCondition", a.success_condition),
        ("failureCondition", a.failure_condition),
        ("min", a.min),
        ("max", a.max),
    ):
        if value is not None:
            spec[key] = value
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    parts = (app.name, check.name) + ((cluster,) if cluster else ())
    return {
        "apiVersion": API_VERSION,
        "kind": CHECK.kind,
        "metadata": {
            "name": dns(o.name, *parts),
            "namespace": o.namespace,
            "labels": {**labels(o, app.name), CHECK_LABEL: check.name},
            "annotations": {HASH_ANNOTATION: digest},
        },
        "spec": spec,
    }
