"""The AWSApplicationLoadBalancerConfig controller: make one ALB listener rule forward
exactly as the config says, and say in status what AWS shows.

observe: ONE DescribeRules on the listener (DescribeTags only when a rule okra does
not obviously own sits at the wanted priority). plan: `plan` (plan.py), a pure function from
the spec and the listener's rules to one `Action`. act: that one write, none when in
sync. report: read the rule back (DescribeRules) and write `status.applied` (what AWS
now shows, in the config's own shape), `ruleARN`, `observedGeneration`,
`lastAppliedTime`, `lastReadTime` (when AWS was read for `applied`) and a `Synced`
condition; Events for writes and problems.

Why read back instead of trusting the write's answer: the Cell controller moves to its
next canary step only when `status.applied` equals what it asked for (Argo Rollouts'
`--aws-verify-target-group`, always on), so status must describe AWS, not intentions.

Ownership: okra manages the rule at `spec.listenerRule.priority` only if it created it
(`status.ruleARN`, or the `okra.mumo.co/owner` tag naming this config) or the rule
already has exactly the wanted conditions (adoption). Any other rule there is a
Conflict: okra reports it and writes nothing. The listener's default rule is never
read as a candidate, modified or deleted.

Idle cost: one DescribeRules per listener per drift check period, shared by the configs
on it (`ListenerRules`), and nothing else; no AWS write and no status write when nothing
changed. Deletion: the finalizer `okra.mumo.co/listener-rule`
holds the config until okra's rule (and only okra's) is deleted. It is added once AWS has
shown the listener, before a rule is written or adopted: a config AWS refuses (a listener
that does not exist) is reported without a write to the API server beyond its status.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers import lbconfig
from okra_controllers.albconfig.plan import (
    Action,
    Conflict,
    Create,
    Modify,
    Move,
    Nothing,
    applied_from_rule,
    drift,
    drift_message,
    in_sync,
    listener_of,
    plan,
    rule_priority,
    same_spec,
    spec_problems,
)
from okra_controllers.api.kinds import ALB_CONFIG
from okra_controllers.api.v1alpha1.cell import (
    AWSApplicationLoadBalancerConfig,
    AWSApplicationLoadBalancerConfigSpec,
    AWSApplicationLoadBalancerConfigStatus,
)
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_controllers.aws import elbv2
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.elbv2 import OWNER_TAG, Json
from okra_controllers.aws.errors import refused
from okra_controllers.aws.recent import RecentAnswers
from okra_controllers.lbconfig import (
    aws_message,
    dump_status,
    error_code,
    patch_status,
    role_refusal,
    status_of,
    weights_note,
    with_read_time,
    with_synced,
)
from okra_controllers.notifications.notifier import Notifier, notifier_for
from okra_controllers.notifications.triggers import DRIFT_REPAIRED, Fired
from okra_runtime.client import Client
from okra_runtime.errors import ConflictError, NotFoundError
from okra_runtime.events import EventRecorder
from okra_runtime.informer import Informer
from okra_runtime.predicates import Any_, FuncPredicate, GenerationChanged
from okra_runtime.reconcile import ReportedError, Request, Result
from okra_runtime.timeutil import utcnow

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

FINALIZER = "okra.mumo.co/listener-rule"
DEFAULT_RESYNC = 300.0
"""Seconds between full resyncs of a config."""
DEFAULT_DRIFT_CHECK = 60.0
"""Seconds between idle looks at the rule in AWS: a rule changed by hand (weights,
conditions, priority, deleted) is restored, with a `DriftRepaired` Event, within this
period (plus `LOOK_MARGIN`): at most one DescribeRules per listener per period, however
many configs it has (see `ListenerRules`)."""
LOOK_MARGIN = 0.25
"""Seconds past the expiry of a listener's shared listing at which its synced configs
look again, so that the first of them lists the rules anew and the others share it."""

log = structlog.get_logger("okra.albconfig")


@dataclass
class Outcome:
    """What one sync found and did, for the status and Events."""

    reason: str
    message: str
    synced: bool = False
    rule: Json | None = None
    rule_arn: str | None = None
    wrote: str | None = None
    """The AWS write made (`RuleCreated`, `RuleModified`, `RuleMoved`, `RuleDeleted`)."""
    notes: list[str] = field(default_factory=list)
    drift: str | None = None
    """What was found changed in AWS since okra last applied this spec (drift repaired)."""
    read_at: datetime.datetime | None = None
    """When AWS was read for `rule` (`status.lastReadTime`); None: AWS was not read."""


class ListenerRules:
    """One DescribeRules per listener, shared by every config on that listener for `ttl`
    seconds. A rule this process writes is read back and put into the listing (`put`);
    a failed write, or one that moves a rule to another priority, forgets the listing.
    So a rollout of 50 Cells on one listener lists it once, not once per write.

    A listener holds up to 100 rules and every config on it would otherwise list them all
    on its own resync; sharing the listing divides the reads (and botocore's parsing of
    them) by the number of configs per listener. The controller sets `ttl` to its drift
    check period and brings each synced config back just after its listener's listing
    expires (`fresh_for`), so the configs of a listener look together: one DescribeRules
    per listener per period, and a listing never older than a moment when it is read.

    Readers get the shared listing itself, not a copy (it is read once per config per
    period and copying it was most of the cost of an idle look): they must never mutate
    it. Every reader in this module is a pure function of it; tests check that a whole
    reconcile leaves it as AWS answered.

    AWS refusing the listing (`ListenerNotFound`: a listener ARN that names nothing) is
    shared too, for `refusal_ttl` seconds: a hundred configs naming the same missing
    listener fail at once on one DescribeRules instead of queueing on the listener's lock
    one AWS call after another, holding workers the other configs need."""

    def __init__(
        self, ttl: float, clock: Callable[[], float] = time.monotonic, refusal_ttl: float = 5.0
    ) -> None:
        self.ttl = ttl
        self.refusal_ttl = min(refusal_ttl, ttl)
        self._clock = clock
        self._cache: dict[str, tuple[float, tuple[Json, ...]]] = {}
        self._refused: RecentAnswers[str, ClientError] = RecentAnswers(self.refusal_ttl, clock)
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, elb: Any, listener: str) -> tuple[Json, ...]:
        async with self._locks.setdefault(listener, asyncio.Lock()):
            hit = self._cache.get(listener)
            if hit is not None and self._clock() - hit[0] < self.ttl:
                return hit[1]
            refusal = self._refused.get(listener)
            if refusal is not None:
                raise ClientError(refusal.response, refusal.operation_name)
            started = self._clock()
            try:
                rules = tuple(await elbv2.describe_rules(elb, listener))
            except ClientError as e:
                if refused(e):
                    self._refused.put(listener, e, started)
                raise
            self._refused.forget(listener)
            self._cache[listener] = (started, rules)
            return rules

    def age(self, listener: str) -> float:
        """Seconds since the listener's shared listing was read from AWS (0 when none
        is held: the next `get` reads it)."""
        hit = self._cache.get(listener)
        return 0.0 if hit is None else max(0.0, self._clock() - hit[0])

    def fresh_for(self, listener: str) -> float | None:
        """Seconds until the listener's shared listing expires (None: none held, as
        after a write)."""
        hit = self._cache.get(listener)
        return None if hit is None else hit[0] + self.ttl - self._clock()

    def put(self, listener: str, rule: Json) -> None:
        """Bring the listener's listing, if one is held, up to date with one rule as AWS
        shows it now (read back after this process wrote it): the rule with the same ARN
        is replaced or the new one added, in DescribeRules' order (by priority, the
        default rule last). The listing keeps its age, so it is still listed anew once
        per `ttl`. A new tuple: listings already handed out stay as they were."""
        hit = self._cache.get(listener)
        if hit is None:
            return
        arn = rule.get("RuleArn")
        others = [r for r in hit[1] if r.get("RuleArn") != arn]
        ordered = sorted(
            [*others, rule], key=lambda r: (rule_priority(r) is None, rule_priority(r) or 0)
        )
        self._cache[listener] = (hit[0], tuple(ordered))

    def forget(self, listener: str) -> None:
        self._cache.pop(listener, None)
        self._refused.forget(listener)


class _NotClaimedError(Exception):
    """The finalizer could not be added (the config changed or is gone): end the reconcile
    with `result`, having written nothing to AWS."""

    def __init__(self, result: Result | None) -> None:
        super().__init__("finalizer not added")
        self.result = result


class AlbConfigReconciler:
    def __init__(
        self,
        client: Client,
        informer: Informer,
        events: EventRecorder,
        aws: AwsConfig,
        *,
        resync: float = DEFAULT_RESYNC,
        drift_check: float = DEFAULT_DRIFT_CHECK,
        clock: Callable[[], datetime.datetime] = utcnow,
        notifier: Notifier | None = None,
    ) -> None:
        self.client = client
        self.notifier = notifier or Notifier(client)
        self.configs = informer.store
        self.events = events
        self.aws = aws
        self.resync = min(resync, drift_check)
        self.clock = clock
        self.listener_rules = ListenerRules(ttl=self.resync)

    def _next_look(self, listener: str) -> float:
        """When a synced config looks at AWS again: just after its listener's shared
        listing expires, so every config on the listener reads one fresh listing together
        (one DescribeRules per listener per period); a full period when none is held."""
        fresh = self.listener_rules.fresh_for(listener)
        if fresh is None or fresh <= 0:
            return self.resync
        return min(self.resync, fresh + LOOK_MARGIN)

    @asynccontextmanager
    async def _elb(self, role_arn: str | None = None) -> AsyncIterator[Any]:
        """An elbv2 client of the process-wide session, or of `role_arn`'s (`roleARN`)."""
        async with self.aws.assuming(role_arn).client("elbv2") as elb:
            yield elb

    async def reconcile(self, req: Request) -> Result | None:
        cached = self.configs.get(req.name, req.namespace)
        if cached is None:
            return None
        raw: Json = cached
        if raw["metadata"].get("deletionTimestamp"):
            return await self._finalize(raw)
        status = status_of(AWSApplicationLoadBalancerConfigStatus, raw)
        config, problems = spec_problems(raw)
        if config is None or problems:
            message = "; ".join(problems)
            self.events.event(raw, "Warning", "InvalidSpec", message)
            await self._report(
                raw, status, Outcome("InvalidSpec", message, rule_arn=status.rule_arn)
            )
            return None
        if raw["metadata"].get("generation") != status.observed_generation:
            for warning in deprecated_spellings(config.kind, raw.get("spec")):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)

        async def claim() -> None:
            # The finalizer goes on once AWS has shown the listener, before okra writes or
            # adopts a rule there. A config whose listener AWS does not know (a typo, a
            # deleted load balancer) has nothing to clean up, and costs no write.
            nonlocal raw
            finalizers = raw["metadata"].get("finalizers") or []
            if FINALIZER in finalizers:
                return
            raw["metadata"]["finalizers"] = [*finalizers, FINALIZER]
            try:
                raw = await self.client.update(raw)
            except ConflictError:
                raise _NotClaimedError(Result(requeue=True)) from None
            except NotFoundError:
                raise _NotClaimedError(None) from None

        async def record_drift(found: str) -> None:
            # Into the owning Cell's outbox before the repair is written: a manager killed
            # between the repair and a later report would restore the rule and never tell
            # (once restored, its successor finds no drift). An API error here fails the
            # reconcile before the repair; it is retried as any.
            fired = Fired(DRIFT_REPAIRED, drift_message(found))
            await self.notifier.notify_owner(raw, fired, self.clock())

        try:
            async with self._elb(config.spec.role_arn) as elb:
                outcome = await self._sync(elb, config, status, claim, record_drift)
        except _NotClaimedError as e:
            return e.result
        except (ClientError, BotoCoreError) as e:
            refusal = role_refusal(e, config.spec.role_arn)
            message = refusal or aws_message(e)
            self.events.event(raw, "Warning", "AWSError", message)
            await self._report(raw, status, Outcome("AWSError", message, rule_arn=status.rule_arn))
            if refusal is not None:
                raise ReportedError(message) from None
            raise
        if outcome.drift:
            message = drift_message(outcome.drift)
            self.events.event(raw, "Warning", "DriftRepaired", message)
            log.warning("listener rule drift repaired", drift=outcome.drift, notes=outcome.notes)
        if outcome.wrote:
            self.events.event(raw, "Normal", outcome.wrote, "; ".join(outcome.notes))
            log.info("wrote listener rule", action=outcome.wrote, notes=outcome.notes)
        elif outcome.notes:
            self.events.event(raw, "Normal", "RuleAdopted", "; ".join(outcome.notes))
        elif outcome.reason == "Conflict":
            self.events.event(raw, "Warning", "Conflict", outcome.message)
        await self._report(raw, status, outcome, config.spec)
        if outcome.synced or outcome.reason == "Conflict":
            return Result(requeue_after=self._next_look(config.spec.listener_arn))
        return Result(requeue=True)  # written but not (yet) shown by AWS: look again soon

    async def _sync(
        self,
        elb: Any,
        config: AWSApplicationLoadBalancerConfig,
        status: AWSApplicationLoadBalancerConfigStatus,
        claim: Callable[[], Awaitable[None]],
        record_drift: Callable[[str], Awaitable[None]],
    ) -> Outcome:
        """Observe the listener, write what the plan says, read it back. `claim` puts the
        finalizer on before any rule is written or adopted; a drift found is handed to
        `record_drift` before the repairing write."""
        spec = config.spec
        owner = f"{config.metadata.namespace}/{config.metadata.name}"
        previous = status.rule_arn
        on_listener = previous if previous and listener_of(previous) == spec.listener_arn else None
        rules, action = await self._decide(elb, spec, owner, on_listener)
        listed_at = self.clock() - datetime.timedelta(
            seconds=self.listener_rules.age(spec.listener_arn)
        )
        if isinstance(action, Conflict):
            return Outcome("Conflict", action.message, rule_arn=previous, read_at=listed_at)
        await claim()
        out = Outcome("", "", read_at=listed_at)
        if not isinstance(action, Nothing) and _was_synced(
            status, spec, config.metadata.generation
        ):
            # A rule okra had in sync now differs (or is gone): changed outside okra.
            found = next((r for r in rules if r["RuleArn"] == previous), None)
            out.drift = drift(spec, found)
            await record_drift(out.drift)
        if isinstance(action, Create):
            try:
                arn = await self._write(elb, spec.listener_arn, action, owner, out)
            except ClientError as e:
                if error_code(e) != "PriorityInUse":
                    raise
                # Our CreateRule may have been applied with its reply lost, and botocore's
                # retry then found the priority taken (by our rule): look again. A rule
                # there with our tag or exactly our conditions is adopted; another is a
                # Conflict, as always.
                log.info("priority in use after CreateRule; reading the listener again")
                rules, action = await self._decide(elb, spec, owner, on_listener)
                out.read_at = self.clock()
                if isinstance(action, Conflict):
                    return Outcome(
                        "Conflict", action.message, rule_arn=previous, read_at=out.read_at
                    )
                if isinstance(action, Create):
                    raise  # still free: a real error, retried by the controller
        if isinstance(action, Nothing):
            arn = action.rule_arn
            rule = next((r for r in rules if r["RuleArn"] == arn), None)
            if arn != previous:
                out.notes.append(f"adopted rule {arn} at priority {rule_priority(rule or {})}")
        elif not isinstance(action, Create):
            arn = await self._write(elb, spec.listener_arn, action, owner, out)
        if not isinstance(action, Nothing):
            rule = await self._read_back(elb, spec.listener_arn, arn)
            out.read_at = self.clock()
        out.rule, out.rule_arn = rule, arn
        out.synced = in_sync(spec, rule)
        moved_listener = previous and previous != arn and listener_of(previous) != spec.listener_arn
        # The config moved to another listener: its new rule serves, so the old one goes.
        if moved_listener:
            self.listener_rules.forget(listener_of(str(previous)))
        if out.synced and moved_listener and await elbv2.delete_rule(elb, str(previous)):
            out.notes.append(f"deleted rule {previous} of the previous listener")
            out.wrote = out.wrote or "RuleDeleted"
        if out.synced:
            out.reason, out.message = "Synced", f"rule {arn} forwards as specified"
        else:
            out.reason = "NotApplied"
            out.message = f"rule {arn} does not (yet) show the written state"
        return out

    async def _decide(
        self,
        elb: Any,
        spec: AWSApplicationLoadBalancerConfigSpec,
        owner: str,
        on_listener: str | None,
    ) -> tuple[Sequence[Json], Action]:
        """The listener's rules (shared listing) and the plan for them; the tags of a
        rule in the way are read only when the first plan finds a Conflict."""
        rules = await self.listener_rules.get(elb, spec.listener_arn)
        action = plan(spec, rules, owner=owner, rule_arn=on_listener)
        if isinstance(action, Conflict):
            tags = {action.rule_arn: await elbv2.rule_tags(elb, action.rule_arn)}
            action = plan(spec, rules, owner=owner, rule_arn=on_listener, tags=tags)
        return rules, action

    async def _write(
        self, elb: Any, listener_arn: str, action: Action, owner: str, out: Outcome
    ) -> str:
        """`_act`, keeping the listener's shared listing honest: forgotten when the write
        fails (what AWS now holds is unknown) or moves a rule to another priority (the
        priorities other configs plan against changed); otherwise `_read_back` brings it
        up to date with the rule as AWS shows it after the write."""
        try:
            arn = await self._act(elb, listener_arn, action, owner, out)
        except BaseException:
            self.listener_rules.forget(listener_arn)
            raise
        if isinstance(action, Move):
            self.listener_rules.forget(listener_arn)
        return arn

    async def _read_back(self, elb: Any, listener_arn: str, arn: str) -> Json | None:
        """The rule as AWS shows it after okra wrote it (one DescribeRules by ARN), put
        into the listener's shared listing in place of what it held for that rule: the
        other configs on the listener, written at the same time (a rollout of many Cells),
        plan against it without listing the listener again after every write. Forgotten
        instead when the rule cannot be read back."""
        try:
            rule = await elbv2.describe_rule(elb, arn)
        except BaseException:
            self.listener_rules.forget(listener_arn)
            raise
        if rule is None:
            self.listener_rules.forget(listener_arn)
        else:
            self.listener_rules.put(listener_arn, rule)
        return rule

    async def _act(
        self, elb: Any, listener_arn: str, action: Action, owner: str, out: Outcome
    ) -> str:
        if isinstance(action, Create):
            rule = await elbv2.create_rule(
                elb,
                listener_arn,
                action.priority,
                action.conditions,
                action.actions,
                {OWNER_TAG: owner},
            )
            arn = str(rule["RuleArn"])
            out.wrote = "RuleCreated"
            out.notes.append(
                f"created rule {arn} at priority {action.priority}{weights_note(action.actions)}"
            )
            return arn
        if isinstance(action, Modify):
            await elbv2.modify_rule(elb, action.rule_arn, action.conditions, action.actions)
            out.wrote = "RuleModified"
            changed = " and ".join(
                part
                for part, value in (("conditions", action.conditions), ("actions", action.actions))
                if value is not None
            )
            out.notes.append(
                f"modified the {changed} of rule {action.rule_arn}{weights_note(action.actions)}"
            )
            return action.rule_arn
        if isinstance(action, Move):
            await elbv2.set_rule_priority(elb, action.rule_arn, action.priority)
            out.wrote = "RuleMoved"
            out.notes.append(f"moved rule {action.rule_arn} to priority {action.priority}")
            return action.rule_arn
        raise AssertionError(f"not a write: {action!r}")

    async def _finalize(self, raw: Json) -> Result | None:
        """Delete okra's rule, then let the config go. A rule is okra's when status
        names it or, if status was lost, when the rule at the priority carries this
        config's owner tag. Nothing else on the listener is touched."""
        finalizers = raw["metadata"].get("finalizers") or []
        if FINALIZER not in finalizers:
            return None
        status = status_of(AWSApplicationLoadBalancerConfigStatus, raw)
        role = (raw.get("spec") or {}).get("roleARN")
        try:
            async with self._elb(role if isinstance(role, str) else None) as elb:
                deleted = await self._delete_ours(elb, raw, status)
        except (ClientError, BotoCoreError) as e:
            message = aws_message(e)
            self.events.event(raw, "Warning", "AWSError", f"deleting the listener rule: {message}")
            raise
        if deleted:
            self.listener_rules.forget(listener_of(deleted))
            self.events.event(raw, "Normal", "RuleDeleted", f"deleted rule {deleted}")
            log.info("deleted listener rule", rule=deleted)
        raw["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
        try:
            await self.client.update(raw)
        except ConflictError:
            return Result(requeue=True)
        except NotFoundError:
            pass
        return None

    async def _delete_ours(
        self, elb: Any, raw: Json, status: AWSApplicationLoadBalancerConfigStatus
    ) -> str | None:
        if status.rule_arn:
            return status.rule_arn if await elbv2.delete_rule(elb, status.rule_arn) else None
        spec = raw.get("spec") or {}
        listener = spec.get("listenerARN")
        priority = (spec.get("listenerRule") or {}).get("priority", elbv2.MAX_PRIORITY)
        if not isinstance(listener, str) or not listener:
            return None
        try:
            rules = await elbv2.describe_rules(elb, listener)
        except ClientError as e:
            if error_code(e) == "ListenerNotFound":
                return None  # the listener, and every rule on it, is gone
            raise
        owner = f"{raw['metadata'].get('namespace')}/{raw['metadata'].get('name')}"
        for rule in rules:
            if rule_priority(rule) == priority:
                arn = str(rule["RuleArn"])
                if (await elbv2.rule_tags(elb, arn)).get(OWNER_TAG) == owner:
                    return arn if await elbv2.delete_rule(elb, arn) else None
        return None

    async def _report(
        self,
        raw: Json,
        old: AWSApplicationLoadBalancerConfigStatus,
        outcome: Outcome,
        spec: AWSApplicationLoadBalancerConfigSpec | None = None,
    ) -> None:
        """Write status if it changed (an idle resync writes nothing). The rule and
        `applied` are kept from before when this sync could not look (invalid spec,
        AWS error)."""
        generation = raw["metadata"].get("generation")
        new = with_synced(
            old,
            synced=outcome.synced,
            reason=outcome.reason,
            message=outcome.message,
            generation=generation,
            now=self.clock(),
            wrote=bool(outcome.wrote),
        )
        if spec is not None:
            new.rule_arn = outcome.rule_arn
            new.applied = applied_from_rule(spec, outcome.rule) if outcome.rule else None
        new = with_read_time(old, new, outcome.read_at)
        await patch_status(self.client, ALB_CONFIG, raw, _dump(old), _dump(new))


def _dump(status: AWSApplicationLoadBalancerConfigStatus) -> Json:
    """Status as written; `applied.listenerRule` without its empty lists, so that it reads
    like the rule a user writes."""
    out = dump_status(status)
    rule = (out.get("applied") or {}).get("listenerRule")
    if rule:
        out["applied"]["listenerRule"] = {k: v for k, v in rule.items() if v != []}
    return out


def _was_synced(
    status: AWSApplicationLoadBalancerConfigStatus,
    spec: AWSApplicationLoadBalancerConfigSpec,
    generation: int | None,
) -> bool:
    """Whether okra had this very spec applied and read back: a write needed now means
    the rule changed in AWS, not in the spec."""
    synced = any(c.type == lbconfig.SYNCED and c.status == "True" for c in status.conditions or [])
    return (
        synced
        and status.observed_generation == generation
        and status.applied is not None
        and same_spec(status.applied, spec)
    )


def _deletion_requested(obj: Json) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


PREDICATES = (Any_(GenerationChanged(), FuncPredicate(_deletion_requested)),)
"""Reconcile on spec changes and deletion requests only: status writes and informer
resyncs do not enqueue (the controller requeues itself every `resync`)."""


def register(
    mgr: Manager,
    aws: AwsConfig,
    *,
    concurrency: int = 1,
    resync: float = DEFAULT_RESYNC,
    drift_check: float = DEFAULT_DRIFT_CHECK,
) -> AlbConfigReconciler:
    """Build the reconciler and its controller on `mgr` (tests pick their own `resync`
    and `drift_check`)."""
    rec = AlbConfigReconciler(
        mgr.client,
        mgr.informer_for(ALB_CONFIG),
        mgr.event_recorder("albconfig-controller"),
        aws,
        resync=resync,
        drift_check=drift_check,
        notifier=notifier_for(mgr),
    )
    (
        mgr.builder("albconfig")
        .for_(ALB_CONFIG, predicates=PREDICATES)
        .with_options(max_concurrent_reconciles=concurrency)
        .complete(rec)
    )
    return rec


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["albconfig"]`)."""
    register(mgr, settings.aws, concurrency=settings.concurrency, drift_check=settings.drift_check)
