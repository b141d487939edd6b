"""The AWSApplicationLoadBalancerConfig controller: make one ALB listener rule forward
exactly as the config says, and say in status what AWS shows.

observe: ONE DescribeRules on the listener (DescribeTags only when a rule okra does
not obviously own sits at the wanted priority). plan: `plan` (plan.py), a pure function from
the spec and the listener's rules to one `Action`. act: that one write, none when in
sync. report: read the rule back (DescribeRules) and write `status.applied` (what AWS
now shows, in the config's own shape), `ruleARN`, `observedGeneration`,
`lastAppliedTime`, `lastReadTime` (when AWS was read for `applied`) and a `Synced`
condition; Events for writes and problems.

The pass around these (the Events, the status write, when to look again, the wiring) is
`configctl`'s; this module is its backend.

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

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import ClientError

from okra_controllers import configctl, lbconfig
from okra_controllers.albconfig.listing import ListenerRules
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
from okra_controllers.configctl import ConfigReconciler, Look, Outcome
from okra_controllers.lbconfig import dump_status, error_code, weights_note

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

__all__ = ["FINALIZER", "AlbConfigReconciler", "ListenerRules", "register", "setup"]

FINALIZER = "okra.mumo.co/listener-rule"
DEFAULT_RESYNC = configctl.DEFAULT_RESYNC
"""Seconds between full resyncs of a config."""
DEFAULT_DRIFT_CHECK = 60.0
"""Seconds between idle looks at the rule in AWS: a rule changed by hand (weights,
conditions, priority, deleted) is restored, with a `DriftRepaired` Event, within this
period (plus `LOOK_MARGIN`): at most one DescribeRules per listener per period, however
many configs it has (see `ListenerRules`)."""
LOOK_MARGIN = 0.25
"""Seconds past the expiry of a listener's shared listing at which its synced configs
look again, so that the first of them lists the rules anew and the others share it."""

Config = AWSApplicationLoadBalancerConfig
Spec = AWSApplicationLoadBalancerConfigSpec
Status = AWSApplicationLoadBalancerConfigStatus

log = structlog.get_logger("okra.albconfig")


@dataclass
class AlbOutcome(Outcome):
    rule: Json | None = None
    """The rule as AWS last showed it."""
    rule_arn: str | None = None


def _conflict(action: Conflict, previous: str | None, read_at: datetime.datetime) -> AlbOutcome:
    """Another's rule at the priority: reported, nothing written."""
    return AlbOutcome("Conflict", action.message, warn=True, rule_arn=previous, read_at=read_at)


class AlbConfigReconciler(ConfigReconciler[Config, Status, AlbOutcome]):
    """One ALB listener rule: DescribeRules (shared per listener), CreateRule, ModifyRule,
    SetRulePriorities, DeleteRule; the finalizer holds a config until its rule is gone."""

    name = "albconfig"
    kind = ALB_CONFIG
    service = "elbv2"
    finalizer = FINALIZER
    releasing = "deleting the listener rule"
    status_model = Status
    log = log

    def __init__(
        self,
        *args: Any,
        resync: float = DEFAULT_RESYNC,
        drift_check: float = DEFAULT_DRIFT_CHECK,
        **options: Any,
    ) -> None:
        super().__init__(*args, resync=min(resync, drift_check), **options)
        self.listener_rules = ListenerRules(ttl=self.resync)

    def idle(self, config: Config) -> float:
        """When a synced config looks at AWS again: just after its listener's shared
        listing expires, so every config on the listener reads one fresh listing together
        (one DescribeRules per listener per period); a full period when none is held."""
        fresh = self.listener_rules.fresh_for(config.spec.listener_arn)
        if fresh is None or fresh <= 0:
            return self.resync
        return min(self.resync, fresh + LOOK_MARGIN)

    def load(self, raw: Json) -> tuple[Config | None, list[str]]:
        return spec_problems(raw)

    def loaded(self, raw: Json, config: Config, status: Status) -> None:
        if raw["metadata"].get("generation") != status.observed_generation:
            for warning in deprecated_spellings(config.kind, raw.get("spec")):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)

    def was_synced(self, status: Status, config: Config, generation: int | None) -> bool:
        """Whether okra had this very spec applied and read back: a write needed now means
        the rule changed in AWS, not in the spec."""
        synced = any(
            c.type == lbconfig.SYNCED and c.status == "True" for c in status.conditions or []
        )
        return (
            synced
            and status.observed_generation == generation
            and status.applied is not None
            and same_spec(status.applied, config.spec)
        )

    def drift_repaired(self, outcome: AlbOutcome) -> None:
        log.warning("listener rule drift repaired", drift=outcome.before, notes=outcome.notes)

    def written(self, outcome: AlbOutcome) -> None:
        log.info("wrote listener rule", action=outcome.wrote, notes=outcome.notes)

    async def sync(self, api: Any, look: Look[Config, Status]) -> AlbOutcome:
        """Observe the listener, write what the plan says, read it back. The finalizer goes
        on (`claim`) once AWS has shown the listener, before a rule is written or adopted:
        a config whose listener AWS does not know (a typo, a deleted load balancer) has
        nothing to clean up, and costs no write. A drift found is recorded before the
        repairing write."""
        spec, previous = look.config.spec, look.status.rule_arn
        owner = f"{look.config.metadata.namespace}/{look.config.metadata.name}"
        on_listener = previous if previous and listener_of(previous) == spec.listener_arn else None
        rules, action = await self._decide(api, spec, owner, on_listener)
        listed_at = self.clock() - datetime.timedelta(
            seconds=self.listener_rules.age(spec.listener_arn)
        )
        if isinstance(action, Conflict):
            return _conflict(action, previous, listed_at)
        await self.claim(look)
        out = AlbOutcome("", "", read_at=listed_at)
        if not isinstance(action, Nothing) and look.was_synced:
            # A rule okra had in sync now differs (or is gone): changed outside okra.
            found = next((r for r in rules if r["RuleArn"] == previous), None)
            out.before = drift(spec, found)
            out.drift = drift_message(out.before)
            await self.record_drift(look, out.drift)
        rules, action, arn = await self._create(api, spec, owner, on_listener, rules, action, out)
        if isinstance(action, Conflict):
            return _conflict(action, previous, out.read_at or listed_at)
        if isinstance(action, Nothing):
            arn = action.rule_arn
            rule = next((r for r in rules if r["RuleArn"] == arn), None)
            if arn != previous:
                out.notes.append(f"adopted rule {arn} at priority {rule_priority(rule or {})}")
                out.noted = "RuleAdopted"
        else:
            if arn is None:
                arn = await self._write(api, spec.listener_arn, action, owner, out)
            rule = await self._read_back(api, spec.listener_arn, arn)
            out.read_at = self.clock()
        out.rule, out.rule_arn = rule, arn
        out.synced = in_sync(spec, rule)
        await self._leave_previous(api, spec, previous, arn, out)
        if out.synced:
            out.reason, out.message = "Synced", f"rule {arn} forwards as specified"
        else:
            out.reason = "NotApplied"
            out.message = f"rule {arn} does not (yet) show the written state"
            out.soon = True  # written but not (yet) shown by AWS: look again soon
        return out

    async def _create(
        self,
        elb: Any,
        spec: Spec,
        owner: str,
        on_listener: str | None,
        rules: Sequence[Json],
        action: Action,
        out: AlbOutcome,
    ) -> tuple[Sequence[Json], Action, str | None]:
        """A `Create` written (its rule's ARN); any other action as it is, to be written
        by the caller."""
        if not isinstance(action, Create):
            return rules, action, None
        try:
            return rules, action, await self._write(elb, spec.listener_arn, action, owner, out)
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
            if isinstance(action, Create):
                raise  # still free: a real error, retried by the controller
            return rules, action, None

    async def _leave_previous(
        self, elb: Any, spec: Spec, previous: str | None, arn: str, out: AlbOutcome
    ) -> None:
        """The config moved to another listener: its new rule serves, so the old one goes
        (once the new one is in sync)."""
        if not previous or previous == arn or listener_of(previous) == spec.listener_arn:
            return
        self.listener_rules.forget(listener_of(previous))
        if out.synced and await elbv2.delete_rule(elb, previous):
            out.notes.append(f"deleted rule {previous} of the previous listener")
            out.wrote = out.wrote or "RuleDeleted"

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

    async def release(self, api: Any, raw: Json, status: Status) -> None:
        """Delete okra's rule. A rule is okra's when status names it or, if status was
        lost, when the rule at the priority carries this config's owner tag. Nothing else
        on the listener is touched."""
        deleted = await self._delete_ours(api, raw, status)
        if deleted:
            self.listener_rules.forget(listener_of(deleted))
            self.events.event(raw, "Normal", "RuleDeleted", f"deleted rule {deleted}")
            log.info("deleted listener rule", rule=deleted)

    def fill(self, new: Status, config: Config, outcome: AlbOutcome) -> None:
        """The rule and `applied` as AWS now shows them."""
        new.rule_arn = outcome.rule_arn
        new.applied = applied_from_rule(config.spec, outcome.rule) if outcome.rule else None

    def dump(self, status: Status) -> Json:
        """Status as written; `applied.listenerRule` without its empty lists, so that it
        reads like the rule a user writes."""
        out = dump_status(status)
        rule = (out.get("applied") or {}).get("listenerRule")
        if rule:
            out["applied"]["listenerRule"] = {k: v for k, v in rule.items() if v != []}
        return out


def register(
    mgr: Manager,
    aws: AwsConfig,
    *,
    concurrency: int = 1,
    resync: float = DEFAULT_RESYNC,
    drift_check: float = DEFAULT_DRIFT_CHECK,
) -> AlbConfigReconciler:
    """Build the reconciler and its controller on `mgr` (tests pick their own `resync`
    and `drift_check`). Reconciles on spec changes and deletion requests only."""
    return configctl.register(
        AlbConfigReconciler,
        mgr,
        aws,
        concurrency=concurrency,
        resync=resync,
        drift_check=drift_check,
    )


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["albconfig"]`)."""
    register(mgr, settings.aws, concurrency=settings.concurrency, drift_check=settings.drift_check)
