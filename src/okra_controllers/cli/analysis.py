"""`okra run analysis`, `okra get analysisrun(s)`, `okra terminate analysisrun`.

`run analysis` creates an AnalysisRun from templates, optionally followed to
its verdict. okra's AnalysisRun controller measures it; this command only
creates it and, with `--wait`, watches it (an informer on that one run),
printing each measurement as it completes. Exit 0 when Successful, 1 for any
other verdict (Failed, Error, Inconclusive), 130 when interrupted."""

from __future__ import annotations

import argparse
import re

from okra_controllers.analysis.templates import TemplateError, TemplateRef, build_run
from okra_controllers.api.kinds import ANALYSIS_RUN
from okra_controllers.api.v1alpha1.analysis import AnalysisRunStatus
from okra_controllers.cli.actions import parse_arguments
from okra_controllers.cli.get import dump, follow, now, write_list
from okra_controllers.cli.kube import CliError, Context, get_or_none, reading, watching
from okra_controllers.cli.render import render_analysis_run, render_analysis_runs
from okra_controllers.cli.view import Obj, strip
from okra_runtime.informer import Informer

TERMINAL = ("Successful", "Failed", "Error", "Inconclusive")
WAITING = ("", "Pending", "Running")
CREATED_BY = {"app.kubernetes.io/created-by": "okra-cli"}


def _dns(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "analysis"


async def cmd_run_analysis(ctx: Context, args: argparse.Namespace) -> int:
    refs = [TemplateRef(t, args.cluster_template) for t in args.template]
    try:
        obj = await build_run(
            ctx.client,
            namespace=ctx.namespace,
            name=args.name or f"{_dns(args.template[0])}-",
            templates=refs,
            args=parse_arguments(args.arg or ()),
            labels=CREATED_BY,
            generate_name=args.name is None,
        )
    except TemplateError as e:
        raise CliError(str(e)) from None
    created = await ctx.client.create(obj)
    name = created["metadata"]["name"]
    ctx.say(f"analysisrun {name} created in namespace {ctx.namespace}")
    if not args.wait:
        return 0
    return await wait_run(ctx, name)


def new_lines(run: Obj, seen: set[tuple[str, str, str]]) -> list[str]:
    """Lines for measurements completed since `seen` (updated in place)."""
    status = AnalysisRunStatus.model_validate(run.get("status") or {})
    out = []
    for result in status.metric_results or []:
        for m in result.measurements:
            if m.phase in WAITING:
                continue
            key = (result.name, str(m.started_at), str(m.finished_at))
            if key in seen:
                continue
            seen.add(key)
            when = f"{m.finished_at:%H:%M:%S} " if m.finished_at else ""
            value = m.value if m.value not in (None, "") else "-"
            why = f": {m.message}" if m.message else ""
            out.append(f"{when}{result.name}: {value} ({m.phase}){why}")
    return out


async def wait_run(ctx: Context, name: str) -> int:
    seen: set[tuple[str, str, str]] = set()
    phase = ""
    async with watching(ctx, ANALYSIS_RUN, name) as changes:
        async for run in changes:
            for line in new_lines(run, seen):
                ctx.say(line)
            status = run.get("status") or {}
            if status.get("phase", "") != phase:
                phase = status.get("phase", "")
                if phase in TERMINAL:
                    message = f": {status['message']}" if status.get("message") else ""
                    ctx.say(f"analysisrun {name}: {phase}{message}")
                    return 0 if phase == "Successful" else 1
                ctx.say(f"analysisrun {name}: {phase or 'Pending'}")
    ctx.say(f"interrupted; analysisrun {name} keeps running")
    return 130


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def judgment_table(run: Obj) -> str:
    """The judged metrics of a run as a table (empty when it has none): each side's count,
    median and p90, the p-value, the change of the medians, the classification; then the
    score."""
    status = AnalysisRunStatus.model_validate(run.get("status") or {})
    rows = [r for r in status.metric_results or [] if r.judgment is not None]
    if not rows and status.judgment is None:
        return ""
    header = (
        "METRIC",
        "CANARY N",
        "MEDIAN",
        "P90",
        "BASELINE N",
        "MEDIAN",
        "P90",
        "P-VALUE",
        "CHANGE",
        "RESULT",
    )
    table: list[tuple[str, ...]] = [header]
    for r in rows:
        j = r.judgment
        assert j is not None
        change = "-" if j.effect_size is None else f"{j.effect_size * 100:+.0f} %"
        label = j.classification + (" (critical)" if j.critical else "")
        table.append(
            (
                r.name,
                str(j.canary.count),
                _num(j.canary.median),
                _num(j.canary.p90),
                str(j.baseline.count),
                _num(j.baseline.median),
                _num(j.baseline.p90),
                _num(j.p_value),
                change,
                label,
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["", "Judgment (canary vs baseline):"]
    lines += [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]
    if status.judgment is not None:
        score = "-" if status.judgment.score is None else f"{status.judgment.score:g}"
        lines.append(
            f"  Score: {score}  ->  {status.judgment.outcome} "
            f"(pass {status.judgment.pass_:g}, marginal {status.judgment.marginal:g})"
        )
    return "\n".join(lines) + "\n"


async def cmd_get_analysisrun(ctx: Context, args: argparse.Namespace) -> int:
    def text(run: Obj) -> str:
        if args.output:
            return dump(strip(run), args.output)
        return render_analysis_run(run, now(), color=ctx.color) + judgment_table(run)

    run = await get_or_none(ctx.client, ANALYSIS_RUN, args.name, ctx.namespace)
    if run is None:
        raise CliError(f"analysisrun {args.name} not found in namespace {ctx.namespace}")
    if not args.watch:
        ctx.out.write(text(run))
        return 0
    informer = Informer(
        ctx.client,
        ANALYSIS_RUN,
        reading(ctx.namespace, f"metadata.name={args.name}"),
    )

    def view() -> tuple[str, str]:
        current = informer.store.get(args.name, ctx.namespace)
        if current is None:
            return "missing", f"analysisrun {args.name} was deleted\n"
        return str(current["metadata"].get("resourceVersion")), text(current)

    return await follow(ctx, [informer], view, json_frames=args.output == "json")


async def cmd_get_analysisruns(ctx: Context, args: argparse.Namespace) -> int:
    selector = f"okra.mumo.co/cell={args.cell}" if args.cell else None
    runs = (await ctx.client.list(ANALYSIS_RUN, ctx.list_namespace, label_selector=selector)).items

    def table() -> str:
        wide = args.output == "wide"
        return render_analysis_runs(
            runs, now(), color=ctx.color, namespaces=ctx.all_namespaces, wide=wide
        )

    write_list(ctx, runs, args.output, "analysisrun.okra.mumo.co", "No analysis runs found", table)
    return 0


async def cmd_terminate_analysisrun(ctx: Context, args: argparse.Namespace) -> int:
    run = await get_or_none(ctx.client, ANALYSIS_RUN, args.name, ctx.namespace)
    if run is None:
        raise CliError(f"analysisrun {args.name} not found in namespace {ctx.namespace}")
    phase = (run.get("status") or {}).get("phase") or "Pending"
    if phase in TERMINAL:
        ctx.say(f"analysisrun {args.name}: already finished ({phase}); nothing to terminate")
        return 0
    await ctx.client.patch(
        ANALYSIS_RUN, args.name, {"spec": {"terminate": True}}, namespace=ctx.namespace
    )
    ctx.say(
        f"analysisrun {args.name}: terminating (was {phase}); measurements in flight finish, "
        "no new ones start"
    )
    return 0
