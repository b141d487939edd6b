"""The AWSTargetGroupBinding controller, in observe → plan → act → report.

observe: the binding; the Argo CD cluster Secrets of its namespace that its entries name
(`clusterName`, matched against the `name` in the Secret, else the Secret's own name, else its
`awsAuthConfig.clusterName`: the EKS cluster's name, as an `awseks` generator writes it) or select
(`clusterSelector`); a `clusterName` no Secret names is looked for in EKS (the shared ListClusters
walk) and reached at its endpoint with an EKS token, as the `awseks` generator reaches it; the
Nodes of each of those clusters, concurrently and each with its own timeout, through a cached
connection (`ClusterConnections`); one DescribeTargetHealth for what
the group holds. plan: `plan.plan` (pure). act: CreateTargetGroup when the binding has no ARN,
tagged `okra.mumo.co/targetgroupbinding=<namespace>/<name>` (a group of that name that exists
already is adopted when it has no such tag, taken back when the tag names this binding, refused
when it names another), then at most one RegisterTargets and one
DeregisterTargets, none when the group already holds exactly what is wanted; when the group
changed (another `targetGroupARN`, or `targetGroup.name`), what the binding's status says it
registered in the previous group is deregistered from it first. report: the ARN
and per-entry targets in status, a `Synced` condition, Events.

Deletion: the finalizer `okra.mumo.co/targetgroupbinding`, added just before the binding's first
RegisterTargets (one that never registered a target is not held), holds the binding until the
targets its status lists are deregistered (one DeregisterTargets). The target group itself is
kept, even one okra created: a group may be in a listener's forward action, and deleting it is
not okra's call.

Nothing is kept in memory but connections, and for a few seconds which target groups AWS said
do not exist: the bindings naming the same missing group (a typo copied a hundred times, a
group deleted under them) are answered from that, one DescribeTargetHealth for all of them
(`MISSING_TTL`). The binding is reconciled every 30 s (Nodes live in other clusters, which okra
does not watch) and at once when it or a cluster Secret of its namespace changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from okra_controllers.api.kinds import AWS_TARGET_GROUP_BINDING, NODE, SECRET
from okra_controllers.api.v1alpha1.common import with_condition
from okra_controllers.api.v1alpha1.targetgroupbinding import (
    AWSTargetGroupBinding,
    AWSTargetGroupBindingStatus,
    TargetGroupSpec,
    TargetSpec,
    node_selector_warnings,
)
from okra_controllers.api.validation import validated
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.eks import AwsReadError
from okra_controllers.aws.errors import hint, refused
from okra_controllers.aws.recent import RecentAnswers
from okra_controllers.clusters.connect import (
    EKS_KEY_PREFIX,
    SECRET_TYPE_LABEL,
    ClusterConnections,
    ClusterSecretError,
    parse_cluster_secret,
)
from okra_controllers.clusters.wiring import (
    RESYNC,
    ClusterReconciler,
    cluster_secret_mapper,
    register_from,
    with_connections,
)
from okra_controllers.finalizers import remove_finalizer
from okra_controllers.targetgroupbinding.plan import Node, ObservedCluster, Plan, Target, plan
from okra_runtime.client import Client
from okra_runtime.errors import ConflictError, NotFoundError
from okra_runtime.labels import selector_from_dict
from okra_runtime.manager import Manager
from okra_runtime.predicates import Any_, FuncPredicate, GenerationChanged
from okra_runtime.reconcile import ReportedError, Request, Result

if TYPE_CHECKING:
    from okra_controllers.settings import Settings

FINALIZER = "okra.mumo.co/targetgroupbinding"
OWNER_TAG = "okra.mumo.co/targetgroupbinding"
"""The AWS tag on a target group a binding created: `<namespace>/<name>` of the binding."""
CLUSTER_TIMEOUT = 10.0
"""Seconds one cluster may take to list its Nodes before it is reported unreachable."""
MISSING_TTL = 5.0
"""Seconds a "target group not found" from DescribeTargetHealth answers the other bindings that
name the same group (at most the resync period)."""
MAX_IDS_IN_EVENT = 20
log = structlog.get_logger("okra.targetgroupbinding")

__all__ = [
    "FINALIZER",
    "TargetGroupBindingReconciler",
    "register",
    "setup",
]


class AwsError(RuntimeError):
    """An AWS call failed; the message names the call and AWS's error code."""


class AwsRefusedError(AwsError, ReportedError):
    """AWS refused the call for what the binding asks (a target group that does not
    exist, a target it rejects, a permission missing): reported in the binding's
    status and an Event, retried on the runtime's long backoff, starting at the resync
    interval (a retry sooner cannot see anything a resync would not)."""


def _aws_error(call: str, e: Exception) -> AwsError:
    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        said = f"{call}: {err.get('Code', 'error')}: {err.get('Message', '')}".strip()
        if refused(e):
            return AwsRefusedError(f"{said}; {hint(e)}" if hint(e) else said)
        return AwsError(said)
    return AwsError(f"{call}: {e}")


def select_clusters(
    ns: str, targets: Sequence[TargetSpec], secrets: Sequence[dict[str, Any]]
) -> tuple[
    dict[str, list[str]], dict[str, dict[str, Any]], dict[str, ObservedCluster], dict[str, str]
]:
    """The clusters each entry of `targets` names or selects among the Argo CD cluster
    `secrets` of `ns`: entry → cluster names; cluster name → its Secret; clusters known to
    be unreadable (their Secret is unusable); clusters no Secret names → why (looked for in
    EKS). Pure: the observation the plan's `clusters_of` comes from."""
    by_name: dict[str, dict[str, Any]] = {}
    by_eks_name: dict[str, dict[str, Any]] = {}
    bad: dict[str, str] = {}
    for s in sorted(secrets, key=lambda s: s["metadata"]["name"]):
        try:
            parsed = parse_cluster_secret(s)
        except ClusterSecretError as e:
            bad[s["metadata"]["name"]] = str(e)
            continue
        by_name.setdefault(parsed.name, s)
        if parsed.aws_auth is not None:
            by_eks_name.setdefault(parsed.aws_auth.cluster_name, s)
    clusters_of: dict[str, list[str]] = {}
    used: dict[str, dict[str, Any]] = {}
    failed: dict[str, ObservedCluster] = {}
    unnamed: dict[str, str] = {}
    for t in targets:
        if t.cluster_name is not None:
            name = t.cluster_name
            secret = (
                by_name.get(name)
                or next((s for s in by_name.values() if s["metadata"]["name"] == name), None)
                or by_eks_name.get(name)
            )
            clusters_of[t.name] = [name]
            if secret is not None:
                used[name] = secret
            elif name in bad:
                failed[name] = ObservedCluster(name, None, bad[name])
            else:
                unnamed[name] = (
                    f"no Argo CD cluster Secret in namespace {ns} names cluster {name} "
                    "(by its name, or by awsAuthConfig.clusterName)"
                )
        elif t.cluster_selector is not None:
            sel = selector_from_dict(t.cluster_selector.model_dump(by_alias=True))
            names = []
            for name, s in by_name.items():
                if sel.matches(s["metadata"].get("labels")):
                    names.append(name)
                    used[name] = s
            for sname, why in bad.items():
                s = next(x for x in secrets if x["metadata"]["name"] == sname)
                if sel.matches(s["metadata"].get("labels")):
                    names.append(sname)
                    failed[sname] = ObservedCluster(sname, None, why)
            clusters_of[t.name] = names
    return clusters_of, used, failed, unnamed


def group_port(targets: Sequence[TargetSpec]) -> int:
    """The port of a group created without `targetGroup.port`: the first target's, or 80."""
    return targets[0].port if targets else 80


def group_request(spec: TargetGroupSpec, default_port: int, owner: str) -> dict[str, Any]:
    """CreateTargetGroup's parameters for the group `spec` describes, tagged as `owner`'s."""
    return {
        "Name": spec.name,
        "Protocol": spec.protocol,
        "Port": spec.port or default_port,
        "VpcId": spec.vpc_id,
        "TargetType": spec.target_type,
        "Tags": [{"Key": OWNER_TAG, "Value": owner}],
    }


def _code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


def _node(raw: dict[str, Any]) -> Node:
    meta = raw.get("metadata") or {}
    return Node(
        name=str(meta.get("name", "")),
        labels=dict(meta.get("labels") or {}),
        provider_id=(raw.get("spec") or {}).get("providerID"),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def _server(secret: dict[str, Any]) -> str:
    try:
        return parse_cluster_secret(secret).server
    except ClusterSecretError:
        return str(secret["metadata"]["name"])


def group_name(arn: str) -> str:
    """`arn:...:targetgroup/web/0123` → `web` ("" for anything else)."""
    _, sep, rest = arn.partition(":targetgroup/")
    return rest.split("/", 1)[0] if sep else ""


def _show(ids: list[str]) -> str:
    more = len(ids) - MAX_IDS_IN_EVENT
    return ", ".join(ids[:MAX_IDS_IN_EVENT]) + (f" and {more} more" if more > 0 else "")


def _targets(ts: tuple[Target, ...]) -> list[dict[str, Any]]:
    return [{"Id": i, "Port": p} for i, p in ts]


class TargetGroupBindingReconciler(ClusterReconciler):
    def _stores(self, mgr: Manager) -> None:
        self.bindings = mgr.informer_for(AWS_TARGET_GROUP_BINDING).store
        # target group ARNs DescribeTargetHealth said do not exist
        self._missing: RecentAnswers[str, bool] = RecentAnswers(min(MISSING_TTL, self.resync))

    # -- observe ---------------------------------------------------------------

    def _clusters(
        self, ns: str, tgb: AWSTargetGroupBinding
    ) -> tuple[
        dict[str, list[str]], dict[str, dict[str, Any]], dict[str, ObservedCluster], dict[str, str]
    ]:
        secrets = self.secrets.list(ns, f"{SECRET_TYPE_LABEL}=cluster")
        return select_clusters(ns, tgb.spec.targets, secrets)

    async def _observe(
        self, ns: str, tgb: AWSTargetGroupBinding
    ) -> tuple[dict[str, list[str]], dict[str, ObservedCluster]]:
        """Entry → cluster names, and cluster name → what was read there: through the Secrets
        naming the clusters, else from EKS."""
        clusters_of, used, failed, unnamed = self._clusters(ns, tgb)

        async def from_secrets() -> list[ObservedCluster]:
            return list(
                await asyncio.gather(
                    *(
                        self._nodes(
                            n, _server(s), functools.partial(self.connections.client_for, s)
                        )
                        for n, s in sorted(used.items())
                    )
                )
            )

        reads, eks_reads = await asyncio.gather(from_secrets(), self._from_eks(unnamed))
        observed = {**failed, **{c.name: c for c in [*reads, *eks_reads]}}
        return clusters_of, observed

    async def _from_eks(self, unnamed: dict[str, str]) -> list[ObservedCluster]:
        """The Nodes of the clusters no Secret names, reached as EKS clusters of okra's own
        account and region (DescribeCluster's endpoint and CA, an EKS token), as an `awseks`
        generator reaches them; or why not (`unnamed`: the reason no Secret was found)."""
        if not unnamed:
            return []
        try:
            found = await self.eks_clusters()
        except AwsReadError as e:
            return [ObservedCluster(n, None, f"{why}; {e}") for n, why in sorted(unnamed.items())]
        described = {c.name: c for c in found.clusters}
        out: list[ObservedCluster] = []
        reads = []
        for name, why in sorted(unnamed.items()):
            c = described.get(name)
            if c is None or c.status in ("DELETING", "FAILED"):
                out.append(ObservedCluster(name, None, f"{why}, and EKS has no cluster {name}"))
            elif c.status != "ACTIVE" or not c.endpoint:
                out.append(ObservedCluster(name, None, f"EKS cluster {name} is {c.status}"))
            else:
                reads.append(
                    self._nodes(
                        name, c.endpoint, functools.partial(self.connections.client_for_eks, c)
                    )
                )
        return out + list(await asyncio.gather(*reads))

    async def _nodes(
        self, name: str, server: str, connect: Callable[[], Awaitable[Client]]
    ) -> ObservedCluster:
        try:
            client = await connect()
            items = await asyncio.wait_for(client.list(NODE), CLUSTER_TIMEOUT)
        except TimeoutError:
            return ObservedCluster(name, None, f"no answer from {server} in {CLUSTER_TIMEOUT:g}s")
        except Exception as e:  # one cluster's failure must not stop the others
            text = str(e) or type(e).__name__
            return ObservedCluster(name, None, f"cannot reach {server}: {text}"[:500])
        return ObservedCluster(name, tuple(_node(n) for n in items.items))

    async def _ensure_group(
        self, elb: Any, spec: TargetGroupSpec, default_port: int, owner: str
    ) -> tuple[str, str]:
        """(ARN, how) of the group named `spec.name`: `created` now, with the tag `OWNER_TAG`
        naming `owner` (the binding, `<namespace>/<name>`); `adopted` when it existed without
        that tag (made by hand or by another tool: its targets become the binding's); "" when
        the tag names this binding already (created before its ARN was recorded). A group whose
        tag names another binding is refused: two bindings would undo each other's targets."""
        try:
            out = await elb.describe_target_groups(Names=[spec.name])
        except ClientError as e:
            if _code(e) != "TargetGroupNotFound":
                raise _aws_error("DescribeTargetGroups", e) from None
        else:
            arn = str(out["TargetGroups"][0]["TargetGroupArn"])
            try:
                tags = await elb.describe_tags(ResourceArns=[arn])
            except (ClientError, BotoCoreError) as e:
                raise _aws_error("DescribeTags", e) from None
            holder = next(
                (
                    str(t.get("Value", ""))
                    for d in tags.get("TagDescriptions") or []
                    for t in d.get("Tags") or []
                    if t.get("Key") == OWNER_TAG
                ),
                None,
            )
            if holder is None:
                return arn, "adopted"
            if holder == owner:
                return arn, ""
            raise AwsRefusedError(
                f"target group {spec.name} belongs to AWSTargetGroupBinding {holder} (its tag "
                f"{OWNER_TAG}); name another group in spec.targetGroup.name"
            )
        try:
            out = await elb.create_target_group(**group_request(spec, default_port, owner))
        except (ClientError, BotoCoreError) as e:
            raise _aws_error("CreateTargetGroup", e) from None
        return str(out["TargetGroups"][0]["TargetGroupArn"]), "created"

    async def _registered(self, elb: Any, arn: str) -> set[Target] | None:
        """The group's targets (draining ones are gone already); None if the group is gone.
        A group AWS said is gone in the last `MISSING_TTL` seconds is not asked about again."""
        if self._missing.get(arn):
            return None
        asked = self._missing.clock()
        try:
            out = await elb.describe_target_health(TargetGroupArn=arn)
        except ClientError as e:
            if _code(e) == "TargetGroupNotFound":
                self._missing.put(arn, True, asked)
                return None
            raise _aws_error("DescribeTargetHealth", e) from None
        except BotoCoreError as e:
            raise _aws_error("DescribeTargetHealth", e) from None
        return {
            (str(d["Target"]["Id"]), int(d["Target"].get("Port") or 0))
            for d in out.get("TargetHealthDescriptions", [])
            if (d.get("TargetHealth") or {}).get("State") != "draining"
        }

    # -- reconcile -------------------------------------------------------------

    # Long on purpose: observe, plan, act and report of one binding, each a call or two.
    async def reconcile(self, req: Request) -> Result | None:
        raw = self.bindings.get(req.name, req.namespace)
        if raw is None:
            await self._forget_gone_secrets()
            return None
        if raw["metadata"].get("deletionTimestamp"):
            return await self._finalize(raw)
        tgb, problem = validated(AWSTargetGroupBinding, raw)
        if tgb is None:
            await self._invalid(raw, problem or "")
            return None
        if raw["metadata"].get("generation") != (raw.get("status") or {}).get("observedGeneration"):
            for warning in node_selector_warnings((raw.get("spec") or {}).get("targets") or []):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)
        ns = req.namespace
        old = tgb.status or AWSTargetGroupBindingStatus()

        clusters_of, observed = await self._observe(ns, tgb)
        await self._forget_gone_secrets()

        arn = tgb.spec.target_group_arn or ""
        created = ""
        p: Plan | None = None
        error = ""
        refusal = False
        try:
            async with self.aws.client("elbv2") as elb:
                if not arn and tgb.spec.target_group is not None:
                    arn, created, registered = await self._own_group(elb, tgb, old, req)
                else:
                    registered = await self._registered(elb, arn)
                if registered is None:
                    raise AwsRefusedError(
                        f"target group {arn} does not exist; check spec.targetGroupARN"
                    )
                try:
                    await self._leave_previous(elb, raw, old, arn)
                except AwsError:
                    arn = old.target_group_arn or arn  # status names the group holding ours
                    raise
                p = plan(tgb.spec.targets, clusters_of, observed, registered, old.targets or [])
                ours = p.register or any(e.ids for e in p.entries)
                if ours and FINALIZER not in (raw["metadata"].get("finalizers") or []):
                    held = await self._hold(raw)
                    if held is None:  # changed or gone meanwhile: the next reconcile sees it
                        return Result(requeue=True)
                    raw = held
                if p.register:
                    try:
                        await elb.register_targets(TargetGroupArn=arn, Targets=_targets(p.register))
                    except (ClientError, BotoCoreError) as e:
                        raise _aws_error("RegisterTargets", e) from None
                if p.deregister:
                    try:
                        await elb.deregister_targets(
                            TargetGroupArn=arn, Targets=_targets(p.deregister)
                        )
                    except (ClientError, BotoCoreError) as e:
                        raise _aws_error("DeregisterTargets", e) from None
        except AwsError as e:
            error, refusal = str(e), isinstance(e, ReportedError)
        except BotoCoreError as e:  # endpoint unreachable, credentials missing
            error = f"AWS: {e}"

        self._say(raw, arn, created, None if error else p)
        await self._report(raw, tgb, arn, p, error)
        if error:  # retried with backoff; the status says why meanwhile
            raise AwsRefusedError(error) if refusal else AwsError(error)
        return Result(requeue_after=self.resync)

    def _say(self, raw: dict[str, Any], arn: str, created: str, p: Plan | None) -> None:
        """Log and Events of what a reconcile did: the group it created or adopted, the
        targets `p` (None: the pass failed) registered and deregistered."""
        if p is not None and not p.in_sync:
            log.info(
                "targets synced",
                target_group=arn,
                registered=len(p.register),
                deregistered=len(p.deregister),
            )
        if created == "created":
            self.events.event(raw, "Normal", "TargetGroupCreated", f"target group {arn} created")
        elif created == "adopted":
            self.events.event(
                raw,
                "Normal",
                "TargetGroupAdopted",
                f"target group {arn} existed without the tag {OWNER_TAG}: its targets are "
                "now this binding's",
            )
        if p is not None:
            if p.register:
                ids = [f"{i}:{port}" for i, port in p.register]
                self.events.event(raw, "Normal", "TargetsRegistered", _show(ids))
            if p.deregister:
                ids = [f"{i}:{port}" for i, port in p.deregister]
                self.events.event(raw, "Normal", "TargetsDeregistered", _show(ids))

    async def _hold(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """Add the finalizer, before the first target is registered: a binding that never
        registered anything has nothing to deregister, so it is not held (a binding AWS
        refuses costs no write for it, and its deletion waits for nobody). None if the
        binding changed or went away meanwhile."""
        raw["metadata"]["finalizers"] = [*(raw["metadata"].get("finalizers") or []), FINALIZER]
        try:
            return await self.client.update(raw)
        except (ConflictError, NotFoundError):
            return None

    async def _own_group(
        self,
        elb: Any,
        tgb: AWSTargetGroupBinding,
        old: AWSTargetGroupBindingStatus,
        req: Request,
    ) -> tuple[str, str, set[Target] | None]:
        """The group `spec.targetGroup` describes: (ARN, how it was come by: see
        `_ensure_group`, its targets). The one status records while it is the one named and
        exists; else found or created by name."""
        spec = tgb.spec.target_group
        assert spec is not None
        arn = old.target_group_arn or ""
        if group_name(arn) != spec.name:
            arn = ""  # another group is asked for now
        registered = await self._registered(elb, arn) if arn else None
        if registered is not None:
            return arn, "", registered
        default_port = group_port(tgb.spec.targets)
        owner = f"{req.namespace}/{req.name}"
        arn, how = await self._ensure_group(elb, spec, default_port, owner)
        self._missing.forget(arn)  # AWS has just shown it
        return arn, how, await self._registered(elb, arn)

    async def _leave_previous(
        self, elb: Any, raw: dict[str, Any], old: AWSTargetGroupBindingStatus, arn: str
    ) -> None:
        """When the binding's group is no longer the one its status names (another
        `targetGroupARN`, a renamed `targetGroup`), deregister from that one what it had."""
        previous = old.target_group_arn or ""
        if not previous or previous == arn:
            return
        left = await self._deregister_ours(elb, previous, old)
        if left:
            shown = _show([f"{i}:{port}" for i, port in left])
            self.events.event(raw, "Normal", "TargetsDeregistered", f"from {previous}: {shown}")

    async def _deregister_ours(
        self, elb: Any, arn: str, old: AWSTargetGroupBindingStatus
    ) -> list[Target]:
        """Deregister from `arn` what `old` (the binding's last status) says it registered and
        the group still holds (one DeregisterTargets, none when nothing is left); what was
        deregistered. A group that is gone holds nothing."""
        ours = {(i, t.port) for t in old.targets or [] for i in t.ids}
        if not ours:
            return []
        registered = await self._registered(elb, arn)
        gone = sorted(ours & (registered or set()))
        if gone:
            try:
                await elb.deregister_targets(TargetGroupArn=arn, Targets=_targets(tuple(gone)))
            except (ClientError, BotoCoreError) as e:
                raise _aws_error("DeregisterTargets", e) from None
        return gone

    async def _finalize(self, raw: dict[str, Any]) -> Result | None:
        """Deregister what status says this binding registered, then let it go."""
        if FINALIZER not in (raw["metadata"].get("finalizers") or []):
            return None
        try:
            old = AWSTargetGroupBindingStatus.model_validate(raw.get("status") or {})
        except ValidationError:
            old = AWSTargetGroupBindingStatus()
        arn = str((raw.get("spec") or {}).get("targetGroupARN") or old.target_group_arn or "")
        gone: list[Target] = []
        if arn and old.targets:
            try:
                async with self.aws.client("elbv2") as elb:
                    gone = await self._deregister_ours(elb, arn, old)
            except (AwsError, BotoCoreError) as e:
                self.events.event(raw, "Warning", "AWSError", f"deregistering targets: {e}")
                raise
        if gone:
            self.events.event(
                raw, "Normal", "TargetsDeregistered", _show([f"{i}:{p}" for i, p in gone])
            )
            log.info("targets deregistered on delete", target_group=arn, deregistered=len(gone))
        return await remove_finalizer(self.client, raw, FINALIZER)

    async def _forget_gone_secrets(self) -> None:
        live = {s["metadata"].get("uid") for s in self.secrets.list()}
        await self.connections.retain(lambda key: key.startswith(EKS_KEY_PREFIX) or key in live)

    # -- report ----------------------------------------------------------------

    async def _report(
        self,
        raw: dict[str, Any],
        tgb: AWSTargetGroupBinding,
        arn: str,
        p: Plan | None,
        error: str,
    ) -> None:
        old = tgb.status or AWSTargetGroupBindingStatus()
        gen = tgb.metadata.generation
        if error:
            status, reason, message = "False", "AWSError", error
        elif p is not None and p.unreachable:
            status, reason = "False", "ClusterUnreachable"
            message = "; ".join(f"{c}: {why}" for c, why in p.unreachable) + (
                " (their targets are kept as last seen)"
            )
        else:
            n = sum(len(e.ids) for e in p.entries) if p is not None else 0
            status, reason, message = "True", "Synced", f"{n} target(s) in {arn}"
        message = message[:2000]
        prev = next((c for c in old.conditions or [] if c.type == "Synced"), None)
        now = self.clock()
        new = AWSTargetGroupBindingStatus(
            observed_generation=gen,
            targetGroupARN=arn or old.target_group_arn,
            targets=[e.status() for e in p.entries] if p is not None and not error else old.targets,
            conditions=with_condition(
                [prev] if prev else [], "Synced", status == "True", reason, message, now, gen
            ),
        )
        if new == old:
            return
        if status == "False" and (prev is None or prev.message != message):
            self.events.event(raw, "Warning", reason, message)
        elif status == "True" and prev is not None and prev.status == "False":
            self.events.event(raw, "Normal", "Synced", message)
        raw["status"] = new.model_dump(by_alias=True, exclude_none=True, mode="json")
        with contextlib.suppress(ConflictError, NotFoundError):  # the resync reports again
            await self.client.update_status(raw)

    async def _invalid(self, raw: dict[str, Any], message: str) -> None:
        self.events.event(raw, "Warning", "InvalidSpec", message)
        status = dict(raw.get("status") or {})
        gen = (raw.get("metadata") or {}).get("generation")
        conds = [c for c in status.get("conditions") or [] if c.get("type") == "Synced"]
        if conds and conds[0].get("reason") == "InvalidSpec" and conds[0].get("message") == message:
            return
        status["observedGeneration"] = gen
        status["conditions"] = [
            {
                "type": "Synced",
                "status": "False",
                "reason": "InvalidSpec",
                "message": message[:2000],
                "lastTransitionTime": self.clock().isoformat().replace("+00:00", "Z"),
                "observedGeneration": gen,
            }
        ]
        raw["status"] = status
        with contextlib.suppress(ConflictError, NotFoundError):
            await self.client.update_status(raw)


def _reaches_clusters(binding: dict[str, Any], _labels: Mapping[str, str]) -> bool:
    """Whether a binding is woken by the Argo CD cluster Secrets of its namespace: it reaches
    clusters (`clusterName` or `clusterSelector` in any entry)."""
    return any(
        "clusterName" in t or "clusterSelector" in t
        for t in (binding.get("spec") or {}).get("targets") or []
    )


def register(
    mgr: Manager, aws: AwsConfig, *, concurrency: int = 1, resync: float = RESYNC
) -> tuple[TargetGroupBindingReconciler, ClusterConnections]:
    """Wire the controller into `mgr`; the connections are closed when the manager stops."""

    def build(rec: TargetGroupBindingReconciler) -> None:
        bindings = mgr.informer_for(AWS_TARGET_GROUP_BINDING).store
        (
            mgr.builder("targetgroupbinding")
            .for_(
                AWS_TARGET_GROUP_BINDING,
                predicates=(
                    Any_(
                        GenerationChanged(),
                        FuncPredicate(lambda o: bool(o["metadata"].get("deletionTimestamp"))),
                    ),
                ),
            )
            .watches(SECRET, cluster_secret_mapper(bindings, _reaches_clusters))
            # AWS refusing a binding (a group that does not exist, a target it rejects) is
            # cured by a spec change, which wakes the binding at once, or by a change in AWS,
            # which is only seen by reading: no sooner than a healthy binding is read again
            .with_options(max_concurrent_reconciles=concurrency, reported_base_delay=resync)
            .complete(rec)
        )

    make = functools.partial(TargetGroupBindingReconciler, mgr, resync=resync)
    return with_connections(mgr, aws, "targetgroupbinding", make, build)


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["targetgroupbinding"]`)."""
    register_from(register, mgr, settings)
