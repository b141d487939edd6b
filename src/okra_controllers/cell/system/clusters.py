"""The system's clusters: which are ready, which are waited for, which are left out, and
which serve each application (`clusterSelector`) through which target group."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.system import (
    SystemApplication,
    SystemCluster,
    SystemClusterStatus,
)
from okra_controllers.cell.plan.model import Event
from okra_controllers.cell.system.model import ClusterSeen, SystemObserved
from okra_runtime.labels import parse_selector


@dataclass
class Readiness:
    status: list[SystemClusterStatus] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # "name: why", in spec order
    left_out: set[str] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    wake_after: float | None = None  # seconds until a readyTimeout passes

    @property
    def ready(self) -> bool:
        return not self.waiting


def problem_of(seen: ClusterSeen | None) -> str:
    """Why a cluster is not ready ("" when it is): EKS's status first, then reachability."""
    if seen is None or not seen.eks_status:
        return (seen.problem if seen is not None else "") or "not found in EKS"
    if seen.eks_status != "ACTIVE":
        return f"EKS status {seen.eks_status}"
    if not seen.reachable:
        return f"not reachable: {seen.problem or 'no answer'}"
    return ""


def readiness(o: SystemObserved, extra: Mapping[str, str]) -> Readiness:
    """Every cluster's readiness. `extra`: a problem found by an application (no Argo CD
    cluster Secret for a cluster it needs). `waitingSince` is kept in the status, so a
    restart does not restart a `readyTimeout`."""
    prior = {c.name: c for c in o.status.clusters or []}
    out = Readiness()
    for c in o.spec.clusters or []:
        seen = o.clusters.get(c.name)
        problem = problem_of(seen) or extra.get(c.name, "")
        before = prior.get(c.name)
        if not problem:
            out.status.append(
                SystemClusterStatus(name=c.name, eks_cluster_name=c.eks_name, ready=True)
            )
            continue
        since = before.waiting_since if before is not None and before.waiting_since else o.now
        timeout = _seconds(c.ready_timeout)
        past = timeout is not None and o.now >= since + datetime.timedelta(seconds=timeout)
        if timeout is not None and not past:
            left = (since + datetime.timedelta(seconds=timeout) - o.now).total_seconds()
            out.wake_after = left if out.wake_after is None else min(out.wake_after, left)
        if not c.require_ready and (timeout is None or past):
            message = f"left out (requireReady: false): {problem}"
            out.left_out.add(c.name)
        elif past:
            message = f"not ready after readyTimeout {c.ready_timeout}: {problem}"
            out.waiting.append(f"{c.name}: {message}")
            if before is None or before.message != message:
                out.events.append(
                    Event("Warning", "ClusterNotReady", f"cluster {c.name} {message}")
                )
        else:
            message = problem
            out.waiting.append(f"{c.name}: {problem}")
        out.status.append(
            SystemClusterStatus(
                name=c.name,
                eks_cluster_name=c.eks_name,
                ready=False,
                message=message,
                waiting_since=since,
            )
        )
    return out


def _seconds(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return parse_duration(text)
    except ValueError:
        return None


def selector_parts(selector: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """(EKS tags, cluster labels) a `clusterSelector` asks for; ValueError when it is not
    one of its shapes (`matchEKSTags`, `matchLabels`, labels written directly)."""
    tags: dict[str, str] = {}
    labels: dict[str, str] = {}
    for key, value in (selector or {}).items():
        if key in ("matchEKSTags", "matchLabels"):
            if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ValueError(f"clusterSelector.{key} must map names to strings")
            (tags if key == "matchEKSTags" else labels).update(value)
        elif isinstance(value, str):
            labels[key] = value
        else:
            raise ValueError(
                f"clusterSelector.{key}: a label value must be a string "
                "(or use matchEKSTags / matchLabels)"
            )
    return tags, labels


def select(
    app: SystemApplication, o: SystemObserved, left_out: set[str]
) -> tuple[list[SystemCluster], str]:
    """The clusters serving `app`, in spec order; or a problem."""
    clusters = [c for c in o.spec.clusters or [] if c.name not in left_out]
    if app.cluster_selector is None:
        if len(o.spec.clusters or []) > 1:
            return [], "clusterSelector is required: the system has more than one cluster"
        return clusters, ""
    try:
        tags, labels = selector_parts(app.cluster_selector)
    except ValueError as e:
        return [], str(e)
    out = []
    for c in clusters:
        seen_tags = (o.clusters.get(c.name) or ClusterSeen()).tags
        if all(c.labels.get(k) == v for k, v in labels.items()) and all(
            seen_tags.get(k) == v for k, v in tags.items()
        ):
            out.append(c)
    if not out:
        unknown = [
            c.name for c in clusters if not (o.clusters.get(c.name) or ClusterSeen()).eks_status
        ]
        if tags and unknown:
            # EKS has not told these clusters' tags yet (not looked up, or not there): the
            # selection is not known, and readiness says what the system waits for
            return [], ""
        return [], "clusterSelector selects none of spec.clusters"
    return out, ""


def target_group_arns(
    app: SystemApplication, clusters: list[SystemCluster], o: SystemObserved
) -> tuple[dict[str, str], str]:
    """Cluster name -> its target group's ARN for `app`'s load balancer; or a problem."""
    found = app.target_group_ref()
    if found is None:
        return {}, ""
    ref, where = found
    if ref.arn is not None and len(clusters) != 1:
        return {}, (
            f"{where}.arn names one target group, but "
            f"{len(clusters)} clusters serve the application: use arnFromLabel or "
            "targetgroupBindingSelector"
        )
    out = {}
    for c in clusters:
        arn, problem = arn_for(app, c, o)
        if problem:
            return {}, problem
        out[c.name] = arn
    return out, ""


def arn_for(app: SystemApplication, c: SystemCluster | None, o: SystemObserved) -> tuple[str, str]:
    """The target group of cluster `c` for `app`: the fixed `arn`, the ARN in the cluster
    entry's label `arnFromLabel`, or that of the one TargetGroupBinding in the cluster that
    `targetgroupBindingSelector` selects. ("", problem) when there is none."""
    where = app.target_group_ref()
    if where is None or c is None:
        return "", "no such cluster"
    ref = where[0]
    if ref.arn is not None:
        return ref.arn, ""
    if ref.arn_from_label is not None:
        arn = c.labels.get(ref.arn_from_label, "")
        if not arn.startswith("arn:"):
            return (
                "",
                f"cluster {c.name} has no target group ARN in its label {ref.arn_from_label!r}",
            )
        return arn, ""
    selector_text = ref.targetgroup_binding_selector or ""
    try:
        selector = parse_selector(selector_text)
    except ValueError as e:
        return "", f"targetgroupBindingSelector {selector_text!r}: {e}"
    seen = o.clusters.get(c.name) or ClusterSeen()
    if seen.bindings is None:
        return "", f"the TargetGroupBindings of cluster {c.name} are not read yet"
    arns = sorted({arn for labels, arn in seen.bindings if selector.matches(labels) and arn})
    if len(arns) != 1:
        found = "none" if not arns else f"{len(arns)} target groups ({', '.join(arns)})"
        return "", (
            f"the TargetGroupBindings of cluster {c.name} selected by {selector_text!r} "
            f"name {found}: exactly one is needed"
        )
    return arns[0], ""
