"""From API objects to the plan's input: a pure function shared by the Cell
controller (objects from its caches) and `okra plan` (objects from plain reads),
so both plan from exactly the same `Observed`."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from okra_controllers.api.v1alpha1.cell import Cell, CellStatus
from okra_controllers.api.v1alpha1.common import GROUP, VERSION
from okra_controllers.cell.argocd import ClusterView, observe_clusters, selected
from okra_controllers.cell.plan import Forward, Observed
from okra_controllers.cell.versions import group_target_groups
from okra_runtime.gvk import GVK
from okra_runtime.timeutil import parse_time

PROMOTE = "okra.mumo.co/promote"
ABORT = "okra.mumo.co/abort"
PAUSED = "okra.mumo.co/pause"  # "true": hold the rollout before its next step (okra pause)

Obj = dict[str, Any]
ALB_CONFIG_KIND = "AWSApplicationLoadBalancerConfig"
NLB_CONFIG_KIND = "AWSNetworkLoadBalancerConfig"
ROUTE53_CONFIG_KIND = "AWSRoute53RecordSetConfig"


def config_kind(cell: Cell | Obj) -> str:
    """The kind of the Cell's load balancer config, by its ingress type: the NLB config
    (the listener's default action) for `AWSNetworkLoadBalancer`, the Route 53 config
    (weighted records) for `AWSRoute53`, else the ALB config (okra's listener rule).
    Takes the model or the object as the API server sends it."""
    if isinstance(cell, Cell):
        kind = cell.spec.ingress.type if cell.spec.ingress is not None else ""
    else:
        kind = ((cell.get("spec") or {}).get("ingress") or {}).get("type") or ""
    if kind == "AWSNetworkLoadBalancer":
        return NLB_CONFIG_KIND
    if kind == "AWSRoute53":
        return ROUTE53_CONFIG_KIND
    return ALB_CONFIG_KIND


def config_gvk(cell: Cell | Obj) -> GVK:
    return GVK(GROUP, VERSION, config_kind(cell))


def selects(cell: Cell, tg: Obj) -> bool:
    if cell.spec.ingress is None:
        return False
    lb = cell.spec.ingress.listener()
    selector = lb.target_group_selector.match_labels if lb else {}
    labels = (tg.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


# Long on purpose: one read per input of `Observed`, in the order its fields are listed.
def observe(
    cell: Cell,
    target_groups: Iterable[Obj],
    config: Obj | None,
    blocklist: Obj | None,
    runs: Iterable[Obj],
    pauses: Iterable[Obj],
    now: datetime.datetime,
    jobs: Iterable[Obj] = (),
    secrets: Iterable[Obj] = (),
    apps: Iterable[Obj] | None = (),
    exact_now: datetime.datetime | None = None,
    job_pods: Mapping[str, str] | None = None,
) -> Observed:
    """`target_groups` already selected by the Cell's selector; `config` the Cell's load
    balancer config (ALB or NLB, by its ingress type); `runs`, `pauses` and `jobs` the
    ones the Cell owns; `secrets` and `apps` the Secrets and Argo CD Applications of the
    Cell's namespace (`apps` None: Argo CD's Application kind is not served), read only
    for a Cell with `spec.argocd`. A Cell with no load balancer has its versions from
    its cluster Secrets, one entry per cluster. `job_pods`: what the Pods of failed check
    Jobs said (Job name -> `exit code N: <last line>`), read by the caller."""
    clusters: ClusterView | None = None
    pauses = list(pauses)
    if cell.spec.argocd is not None:
        secrets = list(secrets)
        clusters = observe_clusters(cell.spec.argocd, cell.spec.labels_for_version(), secrets, apps)
    if cell.spec.ingress is None:
        argo = cell.spec.argocd
        items = [
            (s["metadata"]["name"], "", s["metadata"].get("labels") or {})
            for s in secrets
            if argo is not None and selected(argo, s["metadata"].get("labels") or {})
        ]
    else:
        items = [
            (t["metadata"]["name"], t["spec"]["arn"], t["metadata"].get("labels") or {})
            for t in target_groups
            if (t.get("spec") or {}).get("arn")
        ]
    grouped = group_target_groups(items, cell.spec.labels_for_version())
    forward: tuple[Forward, ...] | None = None
    synced = False
    problem = ""
    waiting = ""
    effective_at: datetime.datetime | None = None
    if config is not None:
        version_of = {
            tg.arn: tg.version.text for group in grouped.by_version.values() for tg in group
        }
        forward = tuple(
            Forward(f["name"], f["arn"], int(f["weight"]), version_of.get(f["arn"], ""))
            for f in config["spec"].get("forwardTargetGroups") or []
        ) or tuple(  # a Route 53 config: one weighted record per target group
            Forward(
                r["setIdentifier"],
                r.get("targetGroupARN", ""),
                int(r["weight"]),
                version_of.get(r.get("targetGroupARN", ""), ""),
            )
            for r in config["spec"].get("records") or []
        )
        cst = config.get("status") or {}
        synced = cst.get("observedGeneration") == config["metadata"].get("generation") and any(
            c.get("type") == "Synced" and c.get("status") == "True"
            for c in cst.get("conditions") or []
        )
        problem = config_problem(config)
        waiting = config_waiting(config)
        effective_at = parse_time(cst.get("effectiveAt")) if waiting else None
    blocked = blocked_versions(blocklist)
    annotations = cell.metadata.annotations
    return Observed(
        cell_name=cell.metadata.name,
        cell_uid=cell.metadata.uid or "",
        generation=cell.metadata.generation or 0,
        spec=cell.spec,
        status=(cell.status or CellStatus()).as_rollout(),
        grouped=grouped,
        forward=forward,
        synced=synced,
        blocked=blocked,
        runs={r["metadata"]["name"]: (r.get("status") or {}).get("phase", "") for r in runs},
        pauses={p["metadata"]["name"]: (p.get("status") or {}).get("phase", "") for p in pauses},
        promote=annotations.get(PROMOTE),
        abort=annotations.get(ABORT),
        now=now,
        paused=annotations.get(PAUSED) == "true",
        jobs={
            j["metadata"]["name"]: job_outcome(j, (job_pods or {}).get(j["metadata"]["name"], ""))
            for j in jobs
        },
        clusters=clusters,
        config_problem=problem,
        config_waiting=waiting,
        config_effective_at=effective_at,
        exact_now=exact_now,
        pause_expiry={
            p["metadata"]["name"]: expiry
            for p in pauses
            if (expiry := parse_time((p.get("spec") or {}).get("expireTime"))) is not None
        },
    )


CONFIG_PROBLEMS = (
    "AWSError",
    "InvalidSpec",
    "Conflict",
    "ListenerNotFound",
    "NotNetworkListener",
    "NoLoadBalancer",
)
"""`Synced` reasons of a load balancer config (ALB, NLB or Route 53) that wait on someone
fixing something."""


def config_problem(config: Obj) -> str:
    """`Reason: message` of the config's `Synced` condition when it is False for one of
    `CONFIG_PROBLEMS` at the config's current generation; "" otherwise."""
    generation = config["metadata"].get("generation")
    for c in (config.get("status") or {}).get("conditions") or []:
        if (
            c.get("type") == "Synced"
            and c.get("status") == "False"
            and c.get("reason") in CONFIG_PROBLEMS
            and c.get("observedGeneration") == generation
        ):
            return f"{c['reason']}: {c.get('message', '')}"
    return ""


CONFIG_WAITS = ("Pending", "Propagating")
"""`Synced` reasons of a Route 53 config whose written records are not yet in effect."""


def config_waiting(config: Obj) -> str:
    """The message of the config's `Synced` condition when it is False for one of
    `CONFIG_WAITS` at the config's current generation (when the weights take effect);
    "" otherwise."""
    generation = config["metadata"].get("generation")
    for c in (config.get("status") or {}).get("conditions") or []:
        if (
            c.get("type") == "Synced"
            and c.get("status") == "False"
            and c.get("reason") in CONFIG_WAITS
            and c.get("observedGeneration") == generation
        ):
            return str(c.get("message") or "")
    return ""


def job_outcome(job: Obj, pod: str = "") -> tuple[str, str]:
    """A check Job's outcome from its conditions (`Complete`/`Failed`), and why; `pod`,
    what its Pod said (`exit code N: <last line>`), replaces the Job's own words when they
    are the Job controller's `BackoffLimitExceeded` (the check exited non-zero) and
    follows them otherwise (a deadline)."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("status") != "True":
            continue
        if c.get("type") == "Complete":
            return "Succeeded", ""
        if c.get("type") == "Failed":
            message = c.get("message")
            if pod:
                backoff = c.get("reason") == "BackoffLimitExceeded"
                message = pod if backoff or not message else f"{message}; {pod}"
            why = ": ".join(x for x in (c.get("reason"), message) if x)
            return "Failed", why
    return "Running", ""


def blocked_versions(blocklist: Obj | None) -> dict[str, str]:
    """The VersionBlocklist's versions, each with its cause (the plan's `blocked`)."""
    return {
        i["version"]: i.get("cause", "")
        for i in ((blocklist or {}).get("spec") or {}).get("items") or []
    }
