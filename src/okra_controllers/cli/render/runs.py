"""`okra get analysisrun`: one AnalysisRun in full (metrics, measurements, verdicts), or a
table of them."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from okra_controllers.api.v1alpha1.analysis import AnalysisRunStatus
from okra_controllers.cli.render.common import Col, Paint, _meta, age, duration, table
from okra_controllers.cli.view import Obj, created


def _run_status(run: Obj) -> AnalysisRunStatus:
    try:
        return AnalysisRunStatus.model_validate(run.get("status") or {})
    except ValueError:
        return AnalysisRunStatus()


def render_analysis_run(run: Obj, now: datetime.datetime, *, color: bool = False) -> str:
    """`okra get analysisrun NAME`: the run's phase, then each metric with its counts
    and every measurement kept in status (oldest first)."""
    paint = Paint(color)
    meta = _meta(run)
    st = _run_status(run)
    labels = meta.get("labels") or {}
    out = [f"{paint.bold('AnalysisRun:')} {meta.get('name')}   (namespace {meta.get('namespace')})"]
    phase = st.phase or "Pending"
    out.append(
        f"{paint.bold('Phase:')}    {paint.auto(phase)}" + (f"  {st.message}" if st.message else "")
    )
    owner = labels.get("okra.mumo.co/cell")
    if owner:
        rollout = labels.get("okra.mumo.co/rollout")
        out.append(
            f"{paint.bold('Cell:')}     {owner}" + (f"  (rollout {rollout})" if rollout else "")
        )
    started = st.started_at
    if started is not None:
        ended = st.completed_at
        took = f", took {duration((ended - started).total_seconds())}" if ended else ""
        out.append(f"{paint.bold('Started:')}  {age(started, now)} ago{took}")
    if (run.get("spec") or {}).get("terminate"):
        out.append(f"{paint.bold('Terminated:')} yes (no new measurements)")
    if st.run_summary is not None:
        s = st.run_summary
        out.append(
            f"{paint.bold('Summary:')}  {s.count} metric(s): {s.successful} successful, "
            f"{s.failed} failed, {s.inconclusive} inconclusive, {s.error} error"
        )
    out.append("")
    results = {r.name: r for r in st.metric_results or []}
    metrics = [str(m.get("name")) for m in (run.get("spec") or {}).get("metrics") or []]
    for name in [*metrics, *(n for n in results if n not in metrics)]:
        r = results.get(name)
        if r is None:
            out.append(
                f"{paint.bold('Metric')} {name}: {paint.auto('Pending')}, no measurement yet"
            )
            continue
        dry = " (dry run)" if r.dry_run else ""
        out.append(
            f"{paint.bold('Metric')} {name}{dry}: {paint.auto(r.phase or 'Pending')}  "
            f"count {r.count}, successful {r.successful}, failed {r.failed}, "
            f"inconclusive {r.inconclusive}, error {r.error}"
            + (f"  {r.message}" if r.message else "")
        )
        rows: list[list[Col]] = [
            [("STARTED", "2"), ("FINISHED", "2"), ("PHASE", "2"), ("VALUE", "2"), ("MESSAGE", "2")]
        ]
        for m in r.measurements:
            rows.append(
                [
                    f"{age(m.started_at, now)} ago" if m.started_at else "-",
                    f"{age(m.finished_at, now)} ago" if m.finished_at else "-",
                    (m.phase or "Pending", ""),
                    m.value if m.value not in (None, "") else "-",
                    m.message or "",
                ]
            )
        if len(rows) > 1:
            out += table(rows, paint, indent="    ")
    return "\n".join(out) + "\n"


def render_analysis_runs(
    runs: Sequence[Obj],
    now: datetime.datetime,
    *,
    color: bool = False,
    namespaces: bool = False,
    wide: bool = False,
) -> str:
    """`okra get analysisruns`: one line per run, newest last."""
    paint = Paint(color)
    rows: list[list[Col]] = [
        [
            *(["NAMESPACE"] if namespaces else []),
            "NAME",
            "PHASE",
            "CELL",
            "ROLLOUT",
            "AGE",
            *(["METRICS", "MESSAGE"] if wide else []),
        ]
    ]
    epoch = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    for r in sorted(runs, key=lambda r: (str(_meta(r).get("namespace")), created(r) or epoch)):
        st = _run_status(r)
        labels = _meta(r).get("labels") or {}
        extra: list[Col] = []
        if wide:
            extra = [
                ",".join(f"{m.name}={m.phase or 'Pending'}" for m in st.metric_results or [])
                or "-",
                st.message or "-",
            ]
        rows.append(
            [
                *([str(_meta(r).get("namespace"))] if namespaces else []),
                str(_meta(r).get("name")),
                (st.phase or "Pending", ""),
                labels.get("okra.mumo.co/cell") or "-",
                labels.get("okra.mumo.co/rollout") or "-",
                age(created(r), now),
                *extra,
            ]
        )
    if len(rows) == 1:
        return "No analysis runs found.\n"
    return "\n".join(table(rows, paint, indent="")) + "\n"
