"""`okra history cell NAME [ROLLOUT]`: a Cell's past rollouts from its `status.history`, as a
table (newest first) or, for one rollout, its timeline (steps, what okra said, and each
analysis with what it measured and what decided it, in time order); `-o json|yaml` prints
the records themselves. A system Cell's record is its applications' (one table each).
`okra history progressiverollout NAME [REVISION]` the same for a ProgressiveRollout: its
revisions, and one revision's stages and clusters. Pure rendering beside the GETs."""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from okra_controllers.api.kinds import PROGRESSIVE_ROLLOUT
from okra_controllers.api.v1alpha1.analysis import MetricJudgmentStatus
from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.api.v1alpha1.history import (
    RecordedAnalysis,
    RecordedMetric,
    RecordedStep,
    RolloutRecord,
)
from okra_controllers.api.v1alpha1.progressiverollout import (
    ProgressiveRolloutStatus,
    RevisionRecord,
)
from okra_controllers.cli.get import dump
from okra_controllers.cli.kube import CliError, Context, get_or_none
from okra_controllers.cli.render.common import Paint, duration, table
from okra_controllers.cli.system import is_system
from okra_controllers.cli.view import get_cell


def records(cell: dict[str, object]) -> list[RolloutRecord]:
    """The Cell's rollout records, newest first."""
    status = CellStatus.model_validate(cell.get("status") or {})
    return list(status.history or [])


def _when(t: datetime.datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if t is not None else "-"


def _took(r: RolloutRecord, now: datetime.datetime) -> str:
    took = duration(((r.ended_at or now) - r.started_at).total_seconds())
    return took if r.ended_at is not None else f"{took} so far"


def render_table(
    name: str, rs: Sequence[RolloutRecord], now: datetime.datetime, paint: Paint
) -> str:
    if not rs:
        return f"cell {name} has no rollout on record yet\n"
    rows: list[list[str | tuple[str, str]]] = [
        ["ROLLOUT", "FROM → TO", "TRIGGER", "STARTED", "TOOK", "OUTCOME", "CAUSE"]
    ]
    for r in rs:
        outcome = r.outcome or "InProgress"
        rows.append(
            [
                r.rollout_id,
                f"{r.from_version or 'none'} → {r.to_version}",
                r.trigger,
                _when(r.started_at),
                _took(r, now),
                (outcome, {"Completed": "32", "InProgress": "36"}.get(outcome, "31")),
                r.cause or "",
            ]
        )
    return "\n".join(table(rows, paint, indent="")) + "\n"


def render_timeline(name: str, r: RolloutRecord, now: datetime.datetime) -> str:
    head = (
        f"cell {name}: rollout {r.rollout_id}, {r.from_version or 'none'} → {r.to_version} "
        f"({r.trigger}{_by(r.started_by)}), {r.outcome or 'in progress'}, {_took(r, now)}"
    )
    lines: list[tuple[datetime.datetime, int, str]] = []
    for s in r.steps:
        lines.append((s.started_at, 1, f"step {s.index + 1} began"))
        if s.ended_at is not None:
            weight = f" (canary at {s.canary_weight}%)" if s.canary_weight is not None else ""
            lines.append((s.ended_at, 0, f"step {s.index + 1} ended{weight}{_traffic(s)}"))
    for e in r.events:
        mark = "!" if e.type == "Warning" else " "
        what = f"{e.reason}{_by(e.user)}"
        lines.append((e.time, 2, f"{mark}{what}: {e.message}" if e.message else what))
    for a in r.analyses or []:
        lines.append((a.completed_at or a.started_at or r.started_at, 3, _analysis(a)))
    lines.sort(key=lambda line: (line[0], line[1]))  # at one time: ends, begins, words, runs
    body = [f"  {_when(t)}  {text}" for t, _, text in lines]
    if r.outcome is not None:
        body.append(f"  {_when(r.ended_at)}  {r.outcome}: {r.cause or ''}".rstrip())
    return "\n".join([head, *body]) + "\n"


def _traffic(s: RecordedStep) -> str:
    """The traffic reading a step ended with: each version's observed and planned share."""
    t = s.traffic
    if t is None:
        return ""
    shares = ", ".join(
        f"{v.version} {v.observed:g}% (planned {v.planned}%)"
        if v.observed is not None
        else f"{v.version} no requests (planned {v.planned}%)"
        for v in t.versions
    )
    return f"; traffic {t.verdict}: {shares} of {t.requests} requests"


def _analysis(a: RecordedAnalysis) -> str:
    """An analysis's verdict, then one line per metric (what it measured, what decided)."""
    mark = "!" if a.phase in ("Failed", "Error") else " "
    head = f"{mark}analysis {a.name} ({a.at}) {a.phase}" + (f": {a.message}" if a.message else "")
    if a.judgment is not None and a.judgment.score is not None:
        j = a.judgment
        head += f"; score {j.score:g} ({j.outcome}; pass {j.pass_:g}, marginal {j.marginal:g})"
    return "\n".join([head, *(" " * 24 + _metric(m) for m in a.metrics)])


def _metric(m: RecordedMetric) -> str:
    counts = f"{m.count} measured, {m.successful} successful, {m.failed} failed"
    if m.inconclusive or m.error:
        counts += f", {m.inconclusive} inconclusive, {m.error} errors"
    text = f"{m.name} {m.phase}{' (dry run)' if m.dry_run else ''}: {counts}"
    if m.measurements:
        text += f"; last {', '.join(x.value for x in m.measurements)}"
    return text + (f"; {_judged(m.judgment)}" if m.judgment is not None else "")


def _judged(j: MetricJudgmentStatus) -> str:
    def median(side: str, n: int, value: float | None) -> str:
        return f"{side} median {value:g} ({n} values)" if value is not None else f"{side} no data"

    text = (
        f"judged {j.classification}: {median('canary', j.canary.count, j.canary.median)} vs "
        f"{median('baseline', j.baseline.count, j.baseline.median)}"
    )
    if j.effect_size is not None:
        text += f", {j.effect_size:+.0%}"
    return text + (f", p {j.p_value:.2g}" if j.p_value is not None else "")


def pick(name: str, rs: Sequence[RolloutRecord], rollout: str) -> RolloutRecord:
    """The record whose ID is `rollout`, or the only one it is a prefix of."""
    exact = [r for r in rs if r.rollout_id == rollout]
    found = exact or [r for r in rs if r.rollout_id.startswith(rollout)]
    if len(found) == 1:
        return found[0]
    known = ", ".join(r.rollout_id for r in rs) or "none"
    if not found:
        raise CliError(f"cell {name} has no rollout {rollout} on record (on record: {known})")
    raise CliError(f"rollout {rollout} is a prefix of several of cell {name}'s: {known}")


async def cmd_history_cell(ctx: Context, args: argparse.Namespace) -> int:
    cell = await get_cell(ctx.client, args.name, ctx.namespace)
    if is_system(cell):
        return await _system(ctx, args, cell)
    rs = records(cell)
    now = datetime.datetime.now(datetime.UTC)
    if args.rollout:
        one = pick(args.name, rs, args.rollout)
        return _show(ctx, args.output, one, lambda: render_timeline(args.name, one, now))
    return _show(ctx, args.output, rs, lambda: render_table(args.name, rs, now, Paint(ctx.color)))


def _show(
    ctx: Context,
    output: str | None,
    shown: BaseModel | Sequence[BaseModel],
    text: Callable[[], str],
) -> int:
    """`shown` (one record or the list) as `-o json|yaml` asks, else `text()`."""
    if output in ("json", "yaml"):

        def doc(r: BaseModel) -> object:
            return r.model_dump(by_alias=True, exclude_none=True, mode="json")

        docs = doc(shown) if isinstance(shown, BaseModel) else [doc(r) for r in shown]
        ctx.out.write(dump(docs, output))
    else:
        ctx.out.write(text())
    return 0


async def _system(ctx: Context, args: argparse.Namespace, cell: dict[str, object]) -> int:
    """A system Cell's record is its applications' records (each application Cell, which
    the system owns, keeps its own): one table per application, or the one rollout of
    any of them that ROLLOUT names."""
    st = CellStatus.model_validate(cell.get("status") or {})
    apps = [(a.name, a.cell) for a in st.applications or [] if a.cell]
    if not apps:
        raise CliError(f"system {args.name} has no application Cell yet: no rollout on record")
    by_app = {app: records(await get_cell(ctx.client, name, ctx.namespace)) for app, name in apps}
    now = datetime.datetime.now(datetime.UTC)
    if args.rollout:
        every = [r for rs in by_app.values() for r in rs]
        chosen = pick(args.name, every, args.rollout)
        app, name = next((a, n) for a, n in apps if chosen in by_app[a])
        if args.output in ("json", "yaml"):
            doc = chosen.model_dump(by_alias=True, exclude_none=True, mode="json")
            ctx.out.write(dump(doc, args.output))
        else:
            ctx.out.write(f"application {app} (cell {name})\n")
            ctx.out.write(render_timeline(name, chosen, now))
        return 0
    if args.output in ("json", "yaml"):
        docs = {
            app: [r.model_dump(by_alias=True, exclude_none=True, mode="json") for r in rs]
            for app, rs in by_app.items()
        }
        ctx.out.write(dump(docs, args.output))
        return 0
    for i, (app, name) in enumerate(apps):
        ctx.out.write(("\n" if i else "") + f"application {app} (cell {name}):\n")
        ctx.out.write(render_table(name, by_app[app], now, Paint(ctx.color)))
    return 0


def rollout_records(pr: dict[str, object]) -> list[RevisionRecord]:
    """A ProgressiveRollout's records, newest first."""
    status = ProgressiveRolloutStatus.model_validate(pr.get("status") or {})
    return list(status.history or [])


def render_revisions(
    name: str, rs: Sequence[RevisionRecord], now: datetime.datetime, paint: Paint
) -> str:
    if not rs:
        return f"progressiverollout {name} has no rollout on record yet\n"
    rows: list[list[str | tuple[str, str]]] = [
        ["REVISION", "STARTED", "TOOK", "OUTCOME", "STAGES", "MESSAGE"]
    ]
    for r in rs:
        outcome = r.outcome or "InProgress"
        done = sum(s.phase == "Completed" for s in r.stages)
        took = duration(((r.ended_at or now) - r.started_at).total_seconds())
        rows.append(
            [
                r.revision,
                _when(r.started_at),
                took if r.ended_at is not None else f"{took} so far",
                (outcome, {"Completed": "32", "InProgress": "36"}.get(outcome, "31")),
                f"{done}/{len(r.stages)} done",
                r.message or "",
            ]
        )
    return "\n".join(table(rows, paint, indent="")) + "\n"


def _by(user: str | None) -> str:
    """` by USER` for a user action (`unknown` where the API server could not vouch)."""
    return f" by {user}" if user is not None else ""


def render_revision(name: str, r: RevisionRecord, now: datetime.datetime) -> str:
    """One revision's rollout: each stage and each of its clusters, in time order."""
    took = duration(((r.ended_at or now) - r.started_at).total_seconds())
    head = f"progressiverollout {name}: revision {r.revision}, {r.outcome or 'in progress'}, {took}"
    lines: list[tuple[datetime.datetime, int, str]] = []
    for s in r.stages:
        if s.started is not None:
            lines.append((s.started, 0, f"stage {s.name} began"))
        for c in s.clusters or []:
            if c.started is not None:
                lines.append(
                    (c.started, 1, f"  {s.name}: cluster {c.name} ({c.application}) began")
                )
            if c.finished is not None:
                said = f": {c.message}" if c.message else ""
                lines.append((c.finished, 2, f"  {s.name}: cluster {c.name} {c.phase}{said}"))
        if s.finished is not None:
            said = f": {s.message}" if s.message else ""
            run = f" (analysis {s.analysis_run} {s.analysis_phase})" if s.analysis_run else ""
            lines.append((s.finished, 3, f"stage {s.name} {s.phase}{run}{said}"))
    for a in r.actions or []:
        lines.append((a.time, 4, f"okra {a.action}{_by(a.user)}"))
    lines.sort(key=lambda line: (line[0], line[1]))
    body = [f"  {_when(t)}  {text}" for t, _, text in lines]
    waiting = [s.name for s in r.stages if s.started is None]
    if waiting and r.ended_at is not None:
        body.append(f"  never began: {', '.join(waiting)}")
    if r.outcome is not None:
        body.append(f"  {_when(r.ended_at)}  {r.outcome}: {r.message or ''}".rstrip())
    return "\n".join([head, *body]) + "\n"


async def cmd_history_rollout(ctx: Context, args: argparse.Namespace) -> int:
    pr = await get_or_none(ctx.client, PROGRESSIVE_ROLLOUT, args.name, ctx.namespace)
    if pr is None:
        raise CliError(f"progressiverollout {args.name} not found in namespace {ctx.namespace}")
    rs = rollout_records(pr)
    now = datetime.datetime.now(datetime.UTC)
    if args.revision:
        found = [r for r in rs if r.revision.startswith(args.revision)]
        if not found:
            known = ", ".join(r.revision for r in rs) or "none"
            raise CliError(
                f"progressiverollout {args.name} has no revision {args.revision} on record "
                f"(on record: {known})"
            )
        one = found[0]  # newest first: the latest rollout of that revision
        return _show(ctx, args.output, one, lambda: render_revision(args.name, one, now))
    paint = Paint(ctx.color)
    return _show(ctx, args.output, rs, lambda: render_revisions(args.name, rs, now, paint))
