"""`okra plan CELL|FILE`: the rollout okra would perform, without writing anything.

Reads the Cell (or takes its spec from FILE, with the live Cell's status if it
exists), its AWSTargetGroups, load balancer config, VersionBlocklist,
AnalysisRuns and Pauses from the API server, and from AWS only reads: the
health of target groups about to get weight for the first time
(DescribeTargetHealth, asked for and planned with by `cell.reads.observe_and_plan`,
as the controller does) and what the listener forwards
today: okra's rule (DescribeRules) behind an ALB, the listener's default action
(DescribeListeners) behind an NLB. Then `cell.observe.observe`
and `cell.simulate.simulate` — the controller's own observation and plan —
give what the controller would do now and each later step with its exact
weights per target group, pauses, analyses, and what blocks the rollout.

`--no-aws` skips AWS: target groups about to get their first weight are then
assumed healthy, and what AWS forwards is not shown.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from okra_controllers.api.kinds import ANALYSIS_RUN, BLOCKLIST, CELL, PAUSE, TARGET_GROUP
from okra_controllers.api.v1alpha1.cell import Cell, CellRoute53, CellStatus
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.elbv2 import (
    DEFAULT_RULE,
    describe_listener,
    describe_rules,
    forward_weights,
    target_health,
)
from okra_controllers.aws.route53 import list_records
from okra_controllers.cell.observe import config_gvk, observe, selects
from okra_controllers.cell.plan import Forward, Observed
from okra_controllers.cell.reads import HealthRead, observe_and_plan
from okra_controllers.cell.simulate import Simulation, Stage, simulate
from okra_controllers.cli.freeze import hold_for
from okra_controllers.cli.kube import CliError, Context, get_or_none
from okra_controllers.cli.render import describe_step, duration, step_label
from okra_runtime.errors import NotFoundError
from okra_runtime.timeutil import utcnow

Obj = dict[str, Any]


def load_cell(path: Path) -> Obj:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError) as e:
        raise CliError(f"{path}: {e}") from None
    cell = next((d for d in docs if d.get("kind") == CELL.kind), None)
    if cell is None:
        raise CliError(f"{path}: no Cell in this file")
    return cell


def file_cell(path: Path) -> Obj | None:
    """The Cell in `path` when the argument names a file (else None: a Cell's name)."""
    named_file = path.suffix in (".yaml", ".yml", ".json") or os.sep in str(path)
    return load_cell(path) if named_file and path.exists() else None


async def read_cell(ctx: Context, arg: str) -> tuple[Obj, str]:
    """The Cell to plan (live, or the file's spec over the live status) and where from."""
    path = Path(arg)
    doc = file_cell(path)
    if doc is None:
        try:
            return await ctx.client.get(CELL, arg, ctx.namespace), "live"
        except NotFoundError:
            raise CliError(f"cell {arg} not found in namespace {ctx.namespace}") from None
    meta = doc.setdefault("metadata", {})
    meta.setdefault("namespace", ctx.namespace)
    if not meta.get("name"):
        raise CliError(f"{path}: the Cell has no metadata.name")
    live = await get_or_none(ctx.client, CELL, meta["name"], meta["namespace"])
    if live is not None:
        lmeta = live["metadata"]
        changed = live.get("spec") != doc.get("spec")
        meta["uid"] = lmeta.get("uid")
        meta["generation"] = (lmeta.get("generation") or 0) + (1 if changed else 0)
        meta["annotations"] = {
            **(lmeta.get("annotations") or {}),
            **(meta.get("annotations") or {}),
        }
        doc["status"] = live.get("status")
        return doc, f"{path} (over the live Cell's status)"
    doc["status"] = None
    meta.setdefault("generation", 1)
    return doc, f"{path} (no live Cell: a first rollout)"


def aws_config(args: argparse.Namespace) -> AwsConfig:
    region = (
        args.region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or "us-east-1"
    )
    return AwsConfig(
        region=region,
        endpoint_url=args.aws_endpoint_url or os.environ.get("AWS_ENDPOINT_URL"),
    )


def owned(objs: list[Obj], uid: str | None) -> list[Obj]:
    if not uid:
        return []
    return [
        o
        for o in objs
        if any(r.get("uid") == uid for r in (o.get("metadata") or {}).get("ownerReferences") or [])
    ]


async def cmd_plan(ctx: Context, args: argparse.Namespace) -> int:
    raw, source = await read_cell(ctx, args.cell)
    try:
        cell = Cell.model_validate(raw)
    except ValueError as e:
        raise CliError(f"the Cell is not valid: {e} (okra lint says more)") from None
    ns, name = cell.metadata.namespace or ctx.namespace, cell.metadata.name
    lb = cell.spec.ingress.listener() if cell.spec.ingress else None
    if lb is None:
        raise CliError(f"cell {name}: spec.ingress has no load balancer (okra lint says more)")
    c = ctx.client
    tgs = [t for t in (await c.list(TARGET_GROUP, ns)).items if selects(cell, t)]
    config = await get_or_none(c, config_gvk(cell), name, ns)
    blocklist = await get_or_none(c, BLOCKLIST, name, ns)
    runs = owned((await c.list(ANALYSIS_RUN, ns)).items, cell.metadata.uid)
    pauses = owned((await c.list(PAUSE, ns)).items, cell.metadata.uid)
    observed = observe(cell, tgs, config, blocklist, runs, pauses, utcnow())
    observed = dataclasses.replace(observed, freeze=await hold_for(c, raw, ns))
    aws = None if args.no_aws else aws_config(args)

    async def observed_once() -> tuple[Observed, Obj | None]:
        return observed, config  # read once: the plan's health is read in one round

    planned = await observe_and_plan(observed_once, health_reader(aws), rounds=1)
    sim = simulate(planned.observed)
    rule = None
    if aws is not None:
        rule = await forwarding(aws, cell)
    doc = document(cell, source, planned.observed, sim, rule, config, dict(planned.health))
    if args.output == "json":
        ctx.out.write(json.dumps(doc, indent=2) + "\n")
    elif args.output == "yaml":
        ctx.out.write(yaml.safe_dump(doc, sort_keys=False))
    else:
        ctx.out.write(render(doc))
    return 0


def health_reader(aws: AwsConfig | None) -> HealthRead:
    """Target health, one target group after another (DescribeTargetHealth, with the
    caller's credentials: no role assumed); each assumed healthy without AWS (`--no-aws`).
    AWS failing to answer ends the command with what it said."""

    async def read(arns: Sequence[str]) -> Mapping[str, tuple[bool, str]]:
        health: dict[str, tuple[bool, str]] = {}
        for arn in arns:
            if aws is None:
                health[arn] = (True, "")
                continue
            try:
                states = await target_health(aws, arn)
            except Exception as e:
                raise CliError(f"AWS DescribeTargetHealth {arn}: {e}") from None
            health[arn] = ("healthy" in states.values(), "")
        return health

    return read


async def forwarding(aws: AwsConfig, cell: Cell) -> Obj:
    """What AWS forwards for the Cell today, as `RuleArn`/`Priority`/`Actions` (an ALB:
    okra's rule at its priority, `{}` when there is none yet) or `ListenerArn`/`Actions`
    (an NLB: the listener's default action)."""
    ingress = cell.spec.ingress
    lb = ingress.listener() if ingress else None
    assert ingress is not None
    assert lb is not None
    if isinstance(lb, CellRoute53):
        return await weighted_records(aws, lb)
    if ingress.network:
        try:
            listener = await describe_listener(aws, lb.listener_arn)
        except Exception as e:
            raise CliError(f"AWS DescribeListeners {lb.listener_arn}: {e}") from None
        if listener is None:
            raise CliError(f"AWS DescribeListeners: no listener {lb.listener_arn}")
        return {"ListenerArn": lb.listener_arn, "Actions": listener.get("DefaultActions") or []}
    try:
        rules = await describe_rules(aws, lb.listener_arn)
    except Exception as e:
        raise CliError(f"AWS DescribeRules {lb.listener_arn}: {e}") from None
    priority = str((getattr(lb, "listener_rule", None) or DEFAULT_RULE).priority)
    return next((r for r in rules if str(r.get("Priority")) == priority), {})


async def weighted_records(aws: AwsConfig, lb: CellRoute53) -> Obj:
    """A Route 53 Cell's records (ListResourceRecordSets, through its role), said as a
    forward by `SetIdentifier` (the target groups' names), with `RecordName`."""
    try:
        async with aws.assuming(lb.role_arn).client("route53") as r53:
            found = await list_records(r53, lb.hosted_zone_id, lb.record_name, lb.record_type)
    except Exception as e:
        raise CliError(f"AWS ListResourceRecordSets {lb.record_name}: {e}") from None
    groups = [
        {"TargetGroupArn": str(r["SetIdentifier"]), "Weight": int(r.get("Weight") or 0)}
        for r in found
        if r.get("SetIdentifier")
    ]
    return {
        "RecordName": lb.record_name,
        "Actions": [{"Type": "forward", "ForwardConfig": {"TargetGroups": groups}}],
    }


def _weights(forward: tuple[Forward, ...] | None) -> list[Obj]:
    return [
        {"name": f.name, "version": f.version, "weight": f.weight}
        for f in sorted(forward or (), key=lambda f: (f.version, f.name))
    ]


def _stage(stage: Stage, steps: list[Any]) -> Obj:
    what: list[str] = []
    if stage.step is not None and stage.step < len(steps):
        what.append(
            f"at step {step_label(stage.step, len(steps))}: {describe_step(steps[stage.step])}"
        )
    for r in stage.runs:
        what.append(f"starts AnalysisRun {r}, waits for it to succeed")
    if stage.pause is not None:
        what.append(
            f"waits {duration(stage.pause_seconds)}"
            if stage.pause_seconds is not None
            else "waits for okra promote"
        )
    return {
        "step": stage.step,
        "health": stage.phase,
        "message": stage.message,
        "writes": _weights(stage.forward) if stage.forward is not None else None,
        "weights": _weights(stage.weights),
        "events": [
            {"type": e.type, "reason": e.reason, "message": e.message} for e in stage.events
        ],
        "analysisRuns": list(stage.runs),
        "pause": stage.pause,
        "pauseSeconds": stage.pause_seconds,
        "what": what,
    }


# Long on purpose: the `okra plan -o yaml` document, field by field, in its printed order.
def document(
    cell: Cell,
    source: str,
    o: Observed,
    sim: Simulation,
    rule: Obj | None,
    config: Obj | None,
    health: dict[str, bool],
) -> Obj:
    st = o.status or CellStatus()
    canary = cell.spec.update_strategy.canary
    blue_green = cell.spec.update_strategy.blue_green
    steps: list[Any] = list(canary.steps) if canary else []
    if cell.spec.update_strategy.type == "BlueGreen":
        steps = list(blue_green.steps) if blue_green else []
    now = sim.now.status
    desired = now.canary_version or now.stable_version
    versions = []
    for v in o.grouped.versions:
        tgs = o.grouped.by_version[v.text]
        versions.append(
            {
                "version": v.text,
                "targetGroups": [t.name for t in tgs],
                "blocked": o.blocked.get(v.text),
                "role": "stable"
                if v.text == (now.stable_version or st.stable_version)
                else "canary"
                if v.text == now.canary_version
                else None,
            }
        )
    aws: Obj | None = None
    if rule is not None:
        actions = rule.get("Actions") or []
        forwarded = dict(forward_weights(actions[0])) if actions else {}
        name_of = {t.arn: t.name for g in o.grouped.by_version.values() for t in g}
        configured = {
            f["arn"]: int(f["weight"])
            for f in ((config or {}).get("spec") or {}).get("forwardTargetGroups") or []
        }
        for r in ((config or {}).get("spec") or {}).get("records") or []:  # Route 53
            configured[str(r.get("setIdentifier"))] = int(r.get("weight") or 0)
        aws = {
            "ruleARN": rule.get("RuleArn"),
            "listenerARN": rule.get("ListenerArn"),
            "recordName": rule.get("RecordName"),
            "priority": rule.get("Priority"),
            "forward": [
                {"name": name_of.get(arn, arn), "arn": arn, "weight": w}
                for arn, w in sorted(forwarded.items())
            ],
            "matchesConfig": bool(actions) and forwarded == configured,
        }
    return {
        "cell": {
            "name": cell.metadata.name,
            "namespace": cell.metadata.namespace,
            "source": source,
        },
        "current": {
            "phase": st.phase,
            "health": st.health,
            "message": st.message,
            "weights": _weights(o.forward),
        },
        "aws": aws,
        "targetHealth": health,
        "versions": versions,
        "desiredVersion": desired,
        "stableVersion": now.stable_version,
        "now": {
            "phase": now.phase,
            "health": now.health,
            "message": now.message,
            "writes": _weights(sim.now.forward) if sim.now.forward is not None else None,
            "held": sim.now.held,
        },
        "stages": [_stage(s, steps) for s in sim.stages],
        "finished": sim.finished,
        "resultVersion": sim.stable if sim.finished else None,
        "blockedBy": sim.blocked_by,
        "plannedAt": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _w(ws: list[Obj] | None) -> str:
    return "  ".join(f"{w['name']}={w['weight']}" for w in ws or []) or "-"


def render(doc: Obj) -> str:
    c = doc["cell"]
    out = [f"Cell:     {c['name']}   (namespace {c['namespace']}; from {c['source']})"]
    cur = doc["current"]
    out.append(
        f"Now:      {cur['phase'] or 'not reconciled'}"
        + (f" ({cur['health']})" if cur.get("health") else "")
        + (f"  {cur['message']}" if cur["message"] else "")
    )
    out.append(f"Config:   {_w(cur['weights'])}")
    aws = doc["aws"]
    if aws is None:
        out.append("AWS:      not read (--no-aws)")
    elif aws.get("recordName"):
        same = "as the config says" if aws["matchesConfig"] else "differs from the config"
        out.append(f"AWS:      {aws['recordName']} answers {_w(aws['forward'])}  ({same})")
    elif not aws["ruleARN"] and not aws["listenerARN"]:
        out.append("AWS:      no rule at the Cell's priority yet")
    else:
        same = "as the config says" if aws["matchesConfig"] else "differs from the config"
        where = f"priority {aws['priority']}" if aws["ruleARN"] else "the listener's default action"
        out.append(f"AWS:      {where} forwards {_w(aws['forward'])}  ({same})")
    for arn, ok in sorted(doc["targetHealth"].items()):
        state = "a healthy target" if ok else "no healthy target"
        out.append(f"Health:   {arn.rsplit('/', 2)[-2]}: {state}")
    out.append("Versions:")
    for v in doc["versions"]:
        tags = [t for t in (v["role"], "blocked: " + v["blocked"] if v["blocked"] else None) if t]
        extra = f"  ({'; '.join(tags)})" if tags else ""
        out.append(f"  {v['version']}: {', '.join(v['targetGroups'])}{extra}")
    if not doc["versions"]:
        out.append("  none: no AWSTargetGroup matches the selector")
    out.append(f"Desired:  {doc['desiredVersion'] or '-'}")
    now = doc["now"]
    out.append(f"Next:     {now['phase']} ({now['health']})  {now['message'] or ''}".rstrip())
    out.append("")
    out.append("Plan (every analysis succeeding, every pause ending; weights per target group):")
    if not doc["stages"]:
        out.append("  nothing to do")
    for i, s in enumerate(doc["stages"], 1):
        what = "; ".join([*s["what"], *(e["reason"] for e in s["events"])]) or s["message"]
        out.append(f"  {i:>2}. {what}")
        if s["writes"] is not None:
            out.append(f"      weights: {_w(s['writes'])}")
    out.append("")
    if doc["finished"]:
        out.append(f"Result:   {doc['resultVersion']} serves 100%")
    else:
        out.append(f"Blocked:  {doc['blockedBy']}")
    return "\n".join(out) + "\n"
