"""The AWSTargetGroupSet controller, in observe → plan → act → report.

observe: the set; the Argo CD cluster Secrets its `argocdClusters` generators select (cache, the
set's namespace); for each cluster, concurrently and each with its own timeout, the
TargetGroupBindings matching `bindingSelector` in all namespaces, through a cached connection
(`ClusterConnections`, rebuilt when the Secret changes; a cluster that does not serve the
TargetGroupBinding kind has none); for the EKS clusters of `awseks` generators with a
`bindingTemplate`, their VPC (DescribeCluster's `vpcId`, else one DescribeSubnets for all that
lack it) and `okra.mumo.co/version` tag; the ARN each generated AWSTargetGroupBinding reports in
its status (for a cluster's own group); with `awsTargetGroups` generators, one
batched AWS read of every target group and its tags (`elbv2.tagged_target_groups`: the listing
page by page, tags 20 ARNs a call), shared by the sets reconciled within a few seconds of it,
plus EKS's clusters (shared the same way) when a generator reads versions from them; the
AWSTargetGroups and AWSTargetGroupBindings this set generated (owner index). plan: `plan.plan`
(pure). act: server-side apply of new or changed groups and bindings, delete of pruned ones (uid
precondition; one already being deleted is left to finish). report: per-cluster status, what the
tag generators found (`status.awsTargetGroups`), a `Ready` condition, Events when a cluster
becomes unreachable or reachable again, when AWS cannot be read or can again, when a target
group cannot be labelled, and when objects are generated or pruned.

An AWS read that fails changes none of the groups found by tags (the others go on): it is
reported, then retried, on the long backoff of a refusal (a missing permission), soon otherwise.

Nothing is kept in memory but connections: a restarted manager re-reads every cluster. The set
is reconciled every 30 s (TargetGroupBindings live in other clusters, which okra does not watch)
and at once when its spec, one of its Secrets or one of its generated objects changes (not when
its own status is written).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.api.kinds import (
    AWS_TARGET_GROUP_BINDING,
    LBC_TARGET_GROUP_BINDING,
    SECRET,
    TARGET_GROUP,
    TARGET_GROUP_SET,
)
from okra_controllers.api.v1alpha1.common import with_condition
from okra_controllers.api.v1alpha1.targetgroupset import (
    AWSEKSGenerator,
    AWSTargetGroupSet,
    AWSTargetGroupSetStatus,
    ClusterStatus,
    TaggedTargetGroupsStatus,
    TargetGroupProblem,
    spelling_warnings,
)
from okra_controllers.api.validation import load_or_report
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.eks import (
    AwsReadError,
    EksCluster,
    subnet_vpcs,
)
from okra_controllers.aws.elbv2 import TaggedTargetGroup, tagged_target_groups
from okra_controllers.aws.errors import error_code, hint
from okra_controllers.clusters import wiring
from okra_controllers.clusters.connect import (
    EKS_KEY_PREFIX,
    SECRET_TYPE_LABEL,
    ClusterConnections,
    ClusterSecretError,
    parse_cluster_secret,
)
from okra_controllers.targetgroupset.plan import (
    BINDING_ANNOTATION,
    CLUSTER_ANNOTATION,
    GENERATED_BINDING_ANNOTATION,
    HASH_ANNOTATION,
    SET_LABEL,
    TARGET_GROUP_ANNOTATION,
    VERSION_KEY,
    Binding,
    Existing,
    ObservedCluster,
    ObservedTargetGroups,
    TaggedResult,
    plan,
)
from okra_runtime.cache import OWNER_INDEX, Store
from okra_runtime.client import Client
from okra_runtime.errors import ApiError, ConflictError, NoKindMatchError, NotFoundError
from okra_runtime.gvk import GVK
from okra_runtime.labels import selector_from_dict
from okra_runtime.manager import Manager
from okra_runtime.predicates import GenerationChanged
from okra_runtime.reconcile import ReportedError, Request, Result

if TYPE_CHECKING:
    from okra_controllers.settings import Settings

FIELD_MANAGER = "okra-targetgroupset-controller"
CLUSTER_TIMEOUT = 10.0
"""Seconds one cluster may take to answer before it is reported unreachable."""
log = structlog.get_logger("okra.targetgroupset")

__all__ = [
    "TargetGroupSetReconciler",
    "cluster_selectors",
    "eks_selected",
    "register",
    "setup",
]


def cluster_selectors(raw_set: dict[str, Any]) -> list[dict[str, str]]:
    """The labels of the Argo CD cluster Secrets each `argocdClusters` generator selects."""
    gens = (raw_set.get("spec") or {}).get("generators") or []
    return [
        ((g.get("argocdClusters") or {}).get("selector") or {}).get("matchLabels") or {}
        for g in gens
        if "argocdClusters" in g
    ]


def eks_selected(gens: Sequence[AWSEKSGenerator], tags: Mapping[str, str]) -> bool:
    """Whether an EKS cluster with `tags` is selected by one of the `awseks` generators."""
    return any(
        all(tags.get(k) == v for k, v in g.cluster_selector.match_tags.items()) for g in gens
    )


class TargetGroupSetReconciler(wiring.ClusterReconciler):
    def _stores(self, mgr: Manager) -> None:
        self.sets: Store = mgr.informer_for(TARGET_GROUP_SET).store
        self.groups: Store = mgr.informer_for(TARGET_GROUP).store
        self.bindings: Store = mgr.informer_for(AWS_TARGET_GROUP_BINDING).store
        self._tagged: tuple[float, tuple[TaggedTargetGroup, ...]] | None = None
        """The last successful read of the account's target groups, and when it was asked."""
        self._tagged_lock = asyncio.Lock()

    # -- observe ---------------------------------------------------------------

    def _cluster_secrets(self, ns: str, raw_set: dict[str, Any]) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for match in cluster_selectors(raw_set):
            sel = selector_from_dict({"matchLabels": {**match, SECRET_TYPE_LABEL: "cluster"}})
            for s in self.secrets.list(ns, sel):
                found[s["metadata"].get("uid") or s["metadata"]["name"]] = s
        return list(found.values())

    async def _observe_secret(
        self, secret: dict[str, Any], binding_selector: str
    ) -> ObservedCluster:
        ref = secret["metadata"]["name"]
        try:
            cluster = parse_cluster_secret(secret)
        except ClusterSecretError as e:
            return ObservedCluster(ref, None, str(e))
        variables = {
            "cluster": {"name": cluster.name, "server": cluster.server, "labels": cluster.labels}
        }
        return await self._read(
            cluster.name,
            cluster.server,
            variables,
            lambda: self.connections.client_for(secret),
            binding_selector,
        )

    async def _read(
        self,
        name: str,
        server: str,
        variables: dict[str, Any],
        connect: Callable[[], Awaitable[Client]],
        binding_selector: str,
    ) -> ObservedCluster:
        """The cluster's TargetGroupBindings, or why they could not be read."""
        try:
            client = await connect()
            items = await asyncio.wait_for(
                client.list(LBC_TARGET_GROUP_BINDING, label_selector=binding_selector or None),
                CLUSTER_TIMEOUT,
            )
        except TimeoutError:
            return ObservedCluster(name, None, f"no answer from {server} in {CLUSTER_TIMEOUT:g}s")
        except (NoKindMatchError, NotFoundError):
            # No TargetGroupBinding kind: no AWS Load Balancer Controller, so no bindings.
            return ObservedCluster(name, (), vars=variables)
        except Exception as e:  # one cluster's failure must not stop the others
            return ObservedCluster(name, None, _describe(server, e))
        bindings = tuple(
            Binding(
                b["metadata"].get("namespace") or "",
                b["metadata"]["name"],
                str((b.get("spec") or {}).get("targetGroupARN") or ""),
            )
            for b in items.items
        )
        return ObservedCluster(name, bindings, vars=variables)

    async def _observe_eks(
        self,
        ns: str,
        tgs: AWSTargetGroupSet,
        binding_selector: str,
        taken: set[str],
        existing_clusters: set[str],
    ) -> list[ObservedCluster]:
        """Clusters of the `awseks` generators: EKS clusters whose tags match, reached through
        the Argo CD Secret naming them in `awsAuthConfig.clusterName` if there is one (its
        credentials win), else directly (DescribeCluster's endpoint and CA, an EKS token)."""
        gens = [g.awseks for g in tgs.spec.generators if g.awseks is not None]
        if not gens:
            return []
        try:
            # read again at each resync; an answer shared for a sixth of it at most
            found = await self.eks_clusters()
        except AwsReadError as e:
            # Nothing is known: keep every group of a cluster not seen through a Secret.
            return [ObservedCluster(c, None, str(e)) for c in sorted(existing_clusters - taken)]
        by_eks_name: dict[str, dict[str, Any]] = {}
        for s in self.secrets.list(ns, f"{SECRET_TYPE_LABEL}=cluster"):
            try:
                parsed = parse_cluster_secret(s)
            except ClusterSecretError:
                continue
            if parsed.aws_auth is not None:
                by_eks_name.setdefault(parsed.aws_auth.cluster_name, s)
        out = [
            ObservedCluster(name, None, "EKS DescribeCluster failed")
            for name in found.unknown
            if name not in taken
        ]
        vpcs = await self._vpcs(tgs, found.clusters)
        reads: list[Awaitable[ObservedCluster]] = []
        for c in sorted(found.clusters, key=lambda c: c.name):
            if c.name in taken or not eks_selected(gens, c.tags):
                continue
            if c.status in ("DELETING", "FAILED"):
                continue  # gone: its groups are pruned
            if c.status != "ACTIVE" or not c.endpoint:
                out.append(ObservedCluster(c.name, None, f"EKS cluster is {c.status}"))
                continue
            variables: dict[str, Any] = {
                "cluster": {"name": c.name, "server": c.endpoint},
                "awseks": {"cluster": {"name": c.name, "tags": dict(c.tags)}},
            }
            secret = by_eks_name.get(c.name)
            if secret is not None:
                parsed = parse_cluster_secret(secret)
                server = parsed.server
                variables["cluster"] = {"name": c.name, "server": server, "labels": parsed.labels}
                connect: Callable[[], Awaitable[Client]] = functools.partial(
                    self.connections.client_for, secret
                )
            else:
                server = c.endpoint
                connect = functools.partial(self.connections.client_for_eks, c)
            vpc, why = vpcs.get(c.name, ("", "not read"))
            reads.append(
                _with_eks(
                    self._read(c.name, server, variables, connect, binding_selector),
                    vpc,
                    why,
                    c.tags.get(VERSION_KEY),
                )
            )
        return out + list(await asyncio.gather(*reads))

    async def _vpcs(
        self, tgs: AWSTargetGroupSet, clusters: Sequence[EksCluster]
    ) -> dict[str, tuple[str, str]]:
        """EKS cluster name -> (its VPC, why "" when unknown); read only for a set with a
        `bindingTemplate` (the VPC is where a cluster's own target group is created). EKS says
        `vpcId`; when it does not, the VPC of the cluster's first subnet (one DescribeSubnets)."""
        if tgs.spec.binding_template is None:
            return {}
        out = {c.name: (c.vpc_id, "") for c in clusters if c.vpc_id}
        ask = {c.name: c.subnet_ids[0] for c in clusters if not c.vpc_id and c.subnet_ids}
        for c in clusters:
            if not c.vpc_id and not c.subnet_ids:
                out[c.name] = ("", f"EKS gives no VPC or subnet for cluster {c.name}")
        if not ask:
            return out
        try:
            by_subnet = await subnet_vpcs(self.aws, list(ask.values()))
        except AwsReadError as e:
            return out | {name: ("", str(e)) for name in ask}
        for name, subnet in ask.items():
            vpc = by_subnet.get(subnet, "")
            out[name] = (vpc, "" if vpc else f"subnet {subnet} of cluster {name} not found")
        return out

    async def _read_tagged(self) -> tuple[TaggedTargetGroup, ...]:
        """Every target group with its tags; one read answers every set reconciled within a
        sixth of the resync period (at most `SHARE_SECONDS`) after it was asked."""
        async with self._tagged_lock:
            if self._tagged is not None:
                asked, groups = self._tagged
                if time.monotonic() - asked < self.share_age:
                    return groups
            asked = time.monotonic()
            groups = tuple(await tagged_target_groups(self.aws))
            self._tagged = (asked, groups)
            return groups

    async def _observe_tagged(
        self, tgs: AWSTargetGroupSet
    ) -> tuple[ObservedTargetGroups | None, Exception | None]:
        """What the `awsTargetGroups` generators need from AWS, and the error that stopped
        the read (None when AWS answered or no generator asked)."""
        gens = [g.aws_target_groups for g in tgs.spec.generators if g.aws_target_groups]
        if not gens:
            return None, None
        try:
            groups = await self._read_tagged()
        except (ClientError, BotoCoreError, OSError, TimeoutError) as e:
            return ObservedTargetGroups(None, _aws_message(e)), e
        if not any(g.eks_cluster_tag for g in gens):
            return ObservedTargetGroups(groups), None
        try:
            found = await self.eks_clusters()
        except AwsReadError as e:
            return ObservedTargetGroups(groups, eks_message=str(e)), None
        eks_tags = {c.name: c.tags for c in found.clusters}
        return ObservedTargetGroups(groups, eks_tags=eks_tags), None

    # -- reconcile -------------------------------------------------------------

    async def reconcile(self, req: Request) -> Result | None:
        loaded = load_or_report(self.sets, req, AWSTargetGroupSet, self.events)
        if loaded is None:
            return None
        raw, tgs = loaded
        if raw["metadata"].get("generation") != (raw.get("status") or {}).get("observedGeneration"):
            for warning in spelling_warnings(raw.get("spec") or {}):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)
        ns, uid = req.namespace, tgs.metadata.uid or ""
        secrets = self._cluster_secrets(ns, raw)
        selector = str(selector_from_dict(tgs.spec.binding_selector.model_dump(by_alias=True)))
        observed = list(await asyncio.gather(*(self._observe_secret(s, selector) for s in secrets)))
        existing = _generated(self.groups, uid, req.name)
        existing_bindings = _generated(self.bindings, uid, req.name)
        taken = {c.name for c in observed}
        clusters_held = {e.cluster for e in (*existing, *existing_bindings)}
        observed += await self._observe_eks(ns, tgs, selector, taken, clusters_held)
        tagged, aws_error = await self._observe_tagged(tgs)
        p = plan(req.name, uid, ns, tgs.spec, observed, existing, existing_bindings, tagged)
        live = {s["metadata"].get("uid") for s in self.secrets.list()}
        await self.connections.retain(lambda key: key.startswith(EKS_KEY_PREFIX) or key in live)

        # act
        errors: list[str] = []
        await self._apply(raw, p.apply, existing, errors)
        await self._apply(raw, p.apply_bindings, existing_bindings, errors)
        await self._delete(
            raw, AWS_TARGET_GROUP_BINDING, self.bindings, ns, p.delete_bindings, errors
        )
        await self._delete(raw, TARGET_GROUP, self.groups, ns, p.delete, errors)

        # report
        await self._report(raw, tgs, p.clusters, errors, p.tagged)
        if isinstance(aws_error, ReportedError):
            raise aws_error  # a refusal: retried on the long backoff of reported errors
        if aws_error is not None:
            return Result(requeue=True)
        return Result(requeue_after=self.resync)

    async def _apply(
        self,
        raw: dict[str, Any],
        objs: Sequence[dict[str, Any]],
        existing: Sequence[Existing],
        errors: list[str],
    ) -> None:
        for obj in objs:
            kind, name = obj["kind"], obj["metadata"]["name"]
            try:
                await self.client.apply(obj, field_manager=FIELD_MANAGER, force=True)
            except ApiError as e:
                errors.append(f"apply {kind} {name}: {e}")
                continue
            if not any(e.name == name for e in existing):
                ann = obj["metadata"]["annotations"]
                if TARGET_GROUP_ANNOTATION in ann:
                    source = f"target group {ann[TARGET_GROUP_ANNOTATION]} (found by its tags)"
                elif BINDING_ANNOTATION not in ann:
                    made = ann.get(GENERATED_BINDING_ANNOTATION)
                    source = f"cluster {ann[CLUSTER_ANNOTATION]}" + (
                        f" (the target group of AWSTargetGroupBinding {made})" if made else ""
                    )
                else:
                    source = f"{ann[BINDING_ANNOTATION]} in cluster {ann[CLUSTER_ANNOTATION]}"
                self.events.event(
                    raw,
                    "Normal",
                    "TargetGroupRegistered" if kind == TARGET_GROUP.kind else "BindingGenerated",
                    f"{kind} {name} for {source}",
                )

    async def _delete(
        self,
        raw: dict[str, Any],
        gvk: GVK,
        store: Store,
        ns: str,
        names: Sequence[str],
        errors: list[str],
    ) -> None:
        for name in names:
            current = store.get(name, ns)
            if current is not None and current["metadata"].get("deletionTimestamp"):
                continue  # being deleted already (a finalizer is at work)
            try:
                await self.client.delete(
                    gvk,
                    name,
                    ns,
                    uid=(current or {}).get("metadata", {}).get("uid"),
                    missing_ok=True,
                )
            except ApiError as e:
                errors.append(f"delete {gvk.kind} {name}: {e}")
                continue
            reason = "TargetGroupPruned" if gvk == TARGET_GROUP else "BindingPruned"
            tg = ((current or {}).get("metadata", {}).get("annotations") or {}).get(
                TARGET_GROUP_ANNOTATION
            )
            annotations = (current or {}).get("metadata", {}).get("annotations") or {}
            if tg:
                why = f"target group {tg} is gone from AWS or no longer selected"
            elif current is not None and BINDING_ANNOTATION not in annotations:
                why = "its cluster is no longer selected or the template changed"
            else:
                why = "its TargetGroupBinding is gone"
            self.events.event(raw, "Normal", reason, f"{gvk.kind} {name}: {why}")

    # Long on purpose: every status field and Event of one pass, written in one place.
    async def _report(
        self,
        raw: dict[str, Any],
        tgs: AWSTargetGroupSet,
        clusters: Any,
        errors: list[str],
        tagged: TaggedResult | None = None,
    ) -> None:
        old = tgs.status or AWSTargetGroupSetStatus()
        was_reachable = {c.name: c.reachable for c in old.clusters or []}
        new_clusters = [
            ClusterStatus(
                name=c.name, reachable=c.reachable, message=c.message, target_groups=c.target_groups
            )
            for c in clusters
        ]
        for c in new_clusters:
            before = was_reachable.get(c.name)
            if not c.reachable and before is not False:
                self.events.event(
                    raw, "Warning", "ClusterUnreachable", f"cluster {c.name}: {c.message}"
                )
            elif c.reachable and before is False:
                self.events.event(raw, "Normal", "ClusterReachable", f"cluster {c.name} is back")
        tagged_status = self._report_tagged(raw, old.aws_target_groups, tagged)
        status, reason, message = ready(tgs, clusters, new_clusters, errors, tagged_status)
        gen = tgs.metadata.generation
        prev = next((c for c in old.conditions or [] if c.type == "Ready"), None)
        now = self.clock()
        new = AWSTargetGroupSetStatus(
            observed_generation=gen,
            clusters=new_clusters,
            aws_target_groups=tagged_status,
            conditions=with_condition(
                [prev] if prev else [], "Ready", status == "True", reason, message, now, gen
            ),
        )
        if new == old:
            return
        if errors and (prev is None or prev.reason != "WriteFailed"):
            self.events.event(raw, "Warning", "WriteFailed", message)
        raw["status"] = new.model_dump(by_alias=True, exclude_none=True, mode="json")
        with contextlib.suppress(ConflictError, NotFoundError):  # the resync reports again
            await self.client.update_status(raw)

    def _report_tagged(
        self,
        raw: dict[str, Any],
        old: TaggedTargetGroupsStatus | None,
        tagged: TaggedResult | None,
    ) -> TaggedTargetGroupsStatus | None:
        """`status.awsTargetGroups`, with an Event when AWS stops or starts answering and one
        for each target group problem not reported before."""
        if tagged is None:
            return None
        if not tagged.read and (old is None or old.read):
            self.events.event(raw, "Warning", "AWSReadFailed", tagged.message)
        elif tagged.read and old is not None and not old.read:
            self.events.event(raw, "Normal", "AWSReadRecovered", "target groups read from AWS")
        if not tagged.read and old is not None:
            problems = old.problems  # nothing is known: what was reported stands
        else:
            problems = [TargetGroupProblem(name=n, message=m) for n, m in tagged.problems] or None
            before = {(p.name, p.message) for p in (old.problems or [])} if old else set()
            for p in problems or []:
                if (p.name, p.message) not in before:
                    self.events.event(
                        raw, "Warning", "TargetGroupProblem", f"target group {p.name}: {p.message}"
                    )
        more = tagged.problem_count - len(tagged.problems)
        return TaggedTargetGroupsStatus(
            read=tagged.read,
            message=tagged.message or (f"{more} more problem(s) not listed" if more > 0 else ""),
            matched=tagged.matched if tagged.read else (old.matched if old else 0),
            target_groups=tagged.target_groups,
            problems=problems,
        )


async def _with_eks(
    read: Awaitable[ObservedCluster], vpc: str, why: str, version: str | None
) -> ObservedCluster:
    """What `read` observed, as an EKS cluster's: its VPC and version tag."""
    return dataclasses.replace(await read, vpc_id=vpc, vpc_message=why, version=version)


def _aws_message(e: BaseException) -> str:
    """What AWS said, and what to do about it when there is advice."""
    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        text = f"{e.operation_name}: {error_code(e) or 'Error'}: {err.get('Message', '')}"
        advice = hint(e)
        text = text.rstrip(": ") + (f" ({advice})" if advice else "")
    else:
        text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return f"reading target groups and their tags from AWS: {text}"[:1000]


def _generated(store: Store, set_uid: str, set_name: str) -> list[Existing]:
    """The objects of `store` this set generated (owned by it, with its label)."""
    return [
        Existing(
            o["metadata"]["name"],
            (o["metadata"].get("annotations") or {}).get(CLUSTER_ANNOTATION, ""),
            (o["metadata"].get("annotations") or {}).get(HASH_ANNOTATION, ""),
            (o["metadata"].get("annotations") or {}).get(TARGET_GROUP_ANNOTATION, ""),
            str((o.get("status") or {}).get("targetGroupARN") or ""),
            _not_synced(o),
        )
        for o in store.by_index(OWNER_INDEX, set_uid)
        if (o["metadata"].get("labels") or {}).get(SET_LABEL) == set_name
    ]


def _not_synced(obj: dict[str, Any]) -> str:
    """The message of a generated binding's `Synced` condition when it is False ("" else)."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Synced" and c.get("status") == "False":
            return str(c.get("message") or c.get("reason") or "not synced")[:500]
    return ""


def _describe(server: str, e: BaseException) -> str:
    """What went wrong reaching a cluster, without anything secret (the server URL and the
    error's type and message only: ApiError messages are the server's, no request headers)."""
    text = str(e) or type(e).__name__
    return f"cannot reach {server}: {text}"[:500]


def _selects_secret(s: dict[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether an Argo CD cluster Secret (its labels) wakes a set of its namespace: a
    generator selects it (every set with an `awseks` generator: it may reach its EKS clusters
    through any Secret)."""
    return any("awseks" in g for g in (s.get("spec") or {}).get("generators") or []) or any(
        all(labels.get(k) == v for k, v in m.items()) for m in cluster_selectors(s)
    )


def register(
    mgr: Manager, aws: AwsConfig, *, concurrency: int = 1, resync: float = wiring.RESYNC
) -> tuple[TargetGroupSetReconciler, ClusterConnections]:
    """Wire the controller into `mgr`; the connections are closed when the manager stops."""

    def build(rec: TargetGroupSetReconciler) -> None:
        sets = mgr.informer_for(TARGET_GROUP_SET).store
        (
            mgr.builder("targetgroupset")
            # spec changes only: the set's own status write must not wake it again
            .for_(TARGET_GROUP_SET, predicates=(GenerationChanged(),))
            .owns(TARGET_GROUP)
            .owns(AWS_TARGET_GROUP_BINDING)
            .watches(SECRET, wiring.cluster_secret_mapper(sets, _selects_secret))
            .with_options(max_concurrent_reconciles=concurrency)
            .complete(rec)
        )

    make = functools.partial(TargetGroupSetReconciler, mgr, resync=resync)
    return wiring.with_connections(mgr, aws, "targetgroupset", make, build)


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["targetgroupset"]`)."""
    wiring.register_from(register, mgr, settings)


def ready(
    tgs: AWSTargetGroupSet,
    clusters: Any,
    new_clusters: list[ClusterStatus],
    errors: list[str],
    tagged_status: TaggedTargetGroupsStatus | None,
) -> tuple[str, str, str]:
    """The set's Ready condition (status, reason, message): the first problem in the order
    a person fixes them (writes, unreachable clusters, AWS reads, templates, bindings,
    target groups, nothing found), else what it found."""
    down = [c for c in new_clusters if not c.reachable]
    broken = [c for c in new_clusters if c.reachable and c.message.startswith("template:")]
    not_synced = {c.name for c in clusters if c.binding_problem}
    problems = (tagged_status.problems or []) if tagged_status else []
    if errors:
        status, reason, message = "False", "WriteFailed", "; ".join(errors)[:2000]
    elif down:
        status, reason = "False", "ClusterUnreachable"
        message = "; ".join(f"{c.name}: {c.message}" for c in down)[:2000]
    elif tagged_status is not None and not tagged_status.read:
        status, reason, message = "False", "AWSReadFailed", tagged_status.message
    elif broken:
        status, reason = "False", "TemplateError"
        message = "; ".join(f"{c.name}: {c.message}" for c in broken)[:2000]
    elif not_synced:
        status, reason = "False", "BindingNotSynced"
        message = "; ".join(f"{c.name}: {c.message}" for c in new_clusters if c.name in not_synced)[
            :2000
        ]
    elif problems:
        status, reason = "False", "TargetGroupProblem"
        message = "; ".join(f"{p.name}: {p.message}" for p in problems)[:2000]
    elif tagged_status is None and not new_clusters:
        status, reason, message = "False", "NoClusters", "no Argo CD cluster Secret matches"
    elif tagged_status is not None and not new_clusters and tagged_status.matched == 0:
        status, reason = "False", "NoTargetGroups"
        message = "no target group carries the tags of " + " or ".join(
            ",".join(f"{k}={v}" for k, v in sorted(g.target_group_selector.match_tags.items()))
            for gen in tgs.spec.generators
            if (g := gen.aws_target_groups) is not None
        )
    else:
        status, reason = "True", "Synced"
        parts = []
        if new_clusters or tagged_status is None:
            parts.append(
                f"{sum(c.target_groups for c in new_clusters)} target group(s) from "
                f"{len(new_clusters)} cluster(s)"
            )
        if tagged_status is not None:
            parts.append(f"{tagged_status.target_groups} target group(s) found by AWS tags")
        message = "; ".join(parts)
    return status, reason, message
