"""What the Cell's plan is made from, and the reads it asks for: one driver, run by the
Cell controller (objects from its caches) and by `okra plan` (objects from plain reads).

`observe_and_plan` observes, plans, and while the plan asks for target health
(`Plan.needs_health`: target groups about to get weight for the first time) reads it,
observes again and plans again; then, when the plan asks what the target groups served
(`Plan.needs_traffic`, `trafficConfirmation`), reads that and plans once more. The reads
themselves are the caller's: the controller's `TargetHealth` (every group at once, a
refusal said in the status) and `traffic.read`; `okra plan`'s its own.

`CachedInputs` is the controller's observation: the Cell's AWSTargetGroups (selector),
its load balancer config, VersionBlocklist, AnalysisRuns, Pauses and Jobs (owner index),
its cluster Secrets and Applications, and the Freezes that hold it, all from the caches.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from okra_controllers.api.kinds import (
    ALB_CONFIG,
    ANALYSIS_RUN,
    APPLICATION,
    BLOCKLIST,
    CELL,
    JOB,
    NLB_CONFIG,
    PAUSE,
    ROUTE53_CONFIG,
    SECRET,
    TARGET_GROUP,
)
from okra_controllers.api.v1alpha1.cell import Cell, CellALB, CellNLB, CellRoute53
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.elbv2 import target_health
from okra_controllers.aws.errors import AwsRefusalError
from okra_controllers.cell import traffic
from okra_controllers.cell.argocd import SECRET_TYPE_LABEL
from okra_controllers.cell.checkjobs import PodFailures
from okra_controllers.cell.observe import observe
from okra_controllers.cell.plan import Observed, Plan, plan
from okra_controllers.cell.plan.traffic import TrafficQuery, TrafficReading
from okra_controllers.freeze import watch as freezes
from okra_controllers.freeze.watch import Sources as FreezeSources
from okra_controllers.lbconfig import aws_message
from okra_runtime.cache import OWNER_INDEX, Store
from okra_runtime.labels import selector_from_dict
from okra_runtime.manager import Manager

Obj = dict[str, Any]
HEALTH_ROUNDS = 3  # health reads in one pass: target groups may arrive during each
HEALTH_WARNINGS_KEPT = 1024
"""Target groups whose last health failure is remembered (to say each once per change)."""
CLUSTER_SECRET = {SECRET_TYPE_LABEL: "cluster"}
log = structlog.get_logger("okra.cell")

Observe = Callable[[], Awaitable[tuple[Observed, Obj | None]]]
"""What the Cell looks like now, and its load balancer config as observed."""
HealthRead = Callable[[Sequence[str]], Awaitable[Mapping[str, tuple[bool, str]]]]
"""Target group ARNs -> whether each has a healthy target, and what AWS said refusing
to describe it ("" when it did not refuse)."""
TrafficRead = Callable[[TrafficQuery], Awaitable[TrafficReading]]


@dataclass(frozen=True)
class Planned:
    observed: Observed  # what the plan was made from, with the health and traffic read
    plan: Plan
    config: Obj | None  # the load balancer config of that observation
    health: Mapping[str, bool]  # target group ARN -> it has a healthy target
    refused: Mapping[str, str]  # target group ARN -> what AWS said refusing to describe it


async def observe_and_plan(
    observe_now: Observe,
    read_health: HealthRead,
    read_traffic: TrafficRead | None = None,
    rounds: int = HEALTH_ROUNDS,
) -> Planned:
    """The plan, made again with each read it asks for (at most `rounds` of health)."""
    observed, config = await observe_now()
    p = plan(observed)
    health: dict[str, bool] = {}
    refused: dict[str, str] = {}
    for _ in range(rounds):
        if not p.needs_health:
            break
        for arn, (ok, why) in (await read_health(p.needs_health)).items():
            health[arn] = ok
            if why:
                refused[arn] = why
        # Observed again: while AWS answered, the caches may have moved on (a newer
        # version's target groups arrived); a plan from the observation before the read
        # would write weight for a version already superseded. Target groups new in it
        # ask for their health in the next round; a plan still asking after the last
        # round holds (it writes nothing) and is looked at again soon.
        observed, config = await observe_now()
        observed = dataclasses.replace(observed, health=dict(health), health_problems=dict(refused))
        p = plan(observed)
    if p.needs_traffic is not None and read_traffic is not None:
        observed = dataclasses.replace(observed, traffic=await read_traffic(p.needs_traffic))
        p = plan(observed)
    return Planned(observed, p, config, health, refused)


def target_group_aws(aws: AwsConfig, cell: Cell) -> AwsConfig:
    """Where the Cell's target groups are read: through an ALB's or NLB's role; a Route 53
    role is the zone's, and its target groups are the manager's own."""
    lb = cell.spec.ingress.listener() if cell.spec.ingress is not None else None
    if isinstance(lb, CellALB | CellNLB):
        return aws.assuming(lb.role_arn)
    return aws


def traffic_reader(aws: AwsConfig, cell: Cell) -> TrafficRead | None:
    """What the target groups served, read where they are (as for health) behind an ALB's
    listener or Route 53 records; None behind an NLB, which the plan never asks about."""
    lb = cell.spec.ingress.listener() if cell.spec.ingress is not None else None
    if not isinstance(lb, CellALB | CellRoute53):
        return None
    where = target_group_aws(aws, cell)

    async def read(q: TrafficQuery) -> TrafficReading:
        return await traffic.read(where, lb, q)

    return read


class TargetHealth:
    """Target health as the controller reads it: every group asked for at once (one
    DescribeTargetHealth each); a group AWS refuses to describe said with AWS's words,
    AWS not answering logged once per change of reason."""

    def __init__(self) -> None:
        # the last reason each target group's health could not be read, said once per change
        self.unavailable: dict[str, str] = {}

    def reader(self, aws: AwsConfig) -> HealthRead:
        async def read(arns: Sequence[str]) -> Mapping[str, tuple[bool, str]]:
            found = await asyncio.gather(*(self.one(arn, aws) for arn in arns))
            return dict(zip(arns, found, strict=True))

        return read

    async def one(self, arn: str, aws: AwsConfig) -> tuple[bool, str]:
        """Whether the target group has a healthy target; and, when AWS refuses to say
        (the group does not exist, a permission is missing), what AWS said."""
        try:
            states = await target_health(aws, arn)
        except AwsRefusalError as e:
            return False, aws_message(e)
        except Exception as e:
            # said once per change of reason: every pass of a Cell held on it (each
            # HEALTH_RECHECK) fails the same way until AWS answers again
            said = self.unavailable.pop(arn, None)
            self.unavailable[arn] = str(e)
            if len(self.unavailable) > HEALTH_WARNINGS_KEPT:
                del self.unavailable[next(iter(self.unavailable))]
            (log.debug if said == str(e) else log.warning)(
                "target health unavailable", target_group=arn, error=str(e)
            )
            return False, ""
        self.unavailable.pop(arn, None)
        return "healthy" in states.values(), ""


@dataclass(frozen=True)
class Caches:
    """The informer caches the Cell controller reads (`apps` None: Argo CD's Application
    kind is not served)."""

    cells: Store
    target_groups: Store
    configs: Store  # AWSApplicationLoadBalancerConfigs
    nlb_configs: Store
    route53_configs: Store
    runs: Store
    pauses: Store
    jobs: Store
    secrets: Store
    blocklists: Store
    apps: Store | None
    freezes: FreezeSources

    @classmethod
    def of(cls, mgr: Manager, argocd: bool) -> Caches:
        def store(gvk: Any) -> Store:
            return mgr.informer_for(gvk).store

        # The keywords are evaluated in the order written: the informers are made in the
        # order they always were (the Application informer last).
        return cls(
            cells=store(CELL),
            target_groups=store(TARGET_GROUP),
            configs=store(ALB_CONFIG),
            nlb_configs=store(NLB_CONFIG),
            route53_configs=store(ROUTE53_CONFIG),
            runs=store(ANALYSIS_RUN),
            pauses=store(PAUSE),
            jobs=store(JOB),
            secrets=store(SECRET),
            blocklists=store(BLOCKLIST),
            freezes=freezes.sources(mgr),
            apps=store(APPLICATION) if argocd else None,
        )


class CachedInputs:
    def __init__(
        self,
        caches: Caches,
        pod_failures: PodFailures,
        clock: Callable[[], datetime.datetime],
        exact_clock: Callable[[], datetime.datetime],
    ) -> None:
        self.caches = caches
        self.pod_failures = pod_failures
        self.clock = clock
        self.exact_clock = exact_clock

    def observer(self, raw: Obj, cell: Cell, blocklist: Obj | None) -> Observe:
        """The Cell observed from the caches each time it is called, with `blocklist`
        (read once per pass) and what its failed check Jobs' Pods said (`job_pods`)."""

        async def observe_now() -> tuple[Observed, Obj | None]:
            return self.observe(raw, cell, blocklist, await self.job_pods(cell))

        return observe_now

    def observe(
        self,
        raw: Obj,
        cell: Cell,
        blocklist: Obj | None,
        job_pods: dict[str, str] | None = None,
    ) -> tuple[Observed, Obj | None]:
        """Cache reads without copies (`copy=False`): `observe` and the config's apply only
        read what they get (test_cell_observe_leaves_cache.py checks it). `job_pods`: what
        the Pods of the Cell's failed check Jobs said (`job_pods`)."""
        c = self.caches
        ns, name = cell.metadata.namespace or "", cell.metadata.name
        ingress = cell.spec.ingress
        tgs: list[Obj] = []
        config = None
        if ingress is not None:
            lb = ingress.listener()
            selector = lb.target_group_selector.match_labels if lb else {}
            tgs = c.target_groups.list(
                ns, selector_from_dict({"matchLabels": selector}), copy=False
            )
            store = c.configs
            if ingress.network:
                store = c.nlb_configs
            elif ingress.route53:
                store = c.route53_configs
            config = store.get(name, ns, copy=False)
        secrets: list[Obj] = []
        apps: list[Obj] | None = []
        if cell.spec.argocd is not None:
            secrets = c.secrets.list(
                ns, selector_from_dict({"matchLabels": CLUSTER_SECRET}), copy=False
            )
            apps = c.apps.list(ns, copy=False) if c.apps is not None else None
        uid = cell.metadata.uid or ""
        observed = observe(
            cell,
            tgs,
            config,
            blocklist,
            c.runs.by_index(OWNER_INDEX, uid, copy=False),
            c.pauses.by_index(OWNER_INDEX, uid, copy=False),
            self.clock(),
            c.jobs.by_index(OWNER_INDEX, uid, copy=False),
            secrets,
            apps,
            exact_now=self.exact_clock(),
            job_pods=job_pods,
        )
        held = freezes.hold_of(c.freezes, raw, observed.now)
        return dataclasses.replace(observed, freeze=held), config

    async def job_pods(self, cell: Cell) -> dict[str, str]:
        """What the Pods of the Cell's failed check Jobs said: each read once, remembered
        (`PodFailures`), outside the pure plan."""
        uid = cell.metadata.uid or ""
        return await self.pod_failures.read(self.caches.jobs.by_index(OWNER_INDEX, uid, copy=False))
