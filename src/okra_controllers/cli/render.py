"""Plain-text views of Cells, target groups and clusters, as pure functions.

Everything here takes API objects (raw dicts, as the server returns them) and
the current time, and returns text: no I/O, so each view is unit-tested with
hand-written objects. Colour (ANSI) is opt-in; the CLI turns it on only when
stdout is a terminal.

Step numbers are shown from 1 (`step 2/4` is the second step), as the Cell's
own status messages count them.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.analysis import AnalysisRunStatus, Measurement
from okra_controllers.api.v1alpha1.cell import DEFAULT_VERSION_LABEL, Cell, CellStatus
from okra_controllers.api.v1alpha1.strategy import BlueGreenStep, CanaryStep
from okra_controllers.cell.observe import ALB_CONFIG_KIND, config_kind
from okra_controllers.cell.plan import weight_before
from okra_controllers.cell.versions import Grouped, group_target_groups
from okra_controllers.cli.trafficview import traffic_lines
from okra_controllers.cli.view import Obj, cell_selector, created, selects
from okra_runtime.timeutil import parse_time

DONE, CURRENT, PENDING = "✓", "▶", "·"
MAX_RUNS = 5
MAX_MEASUREMENTS = 3

_STYLES = {
    "Healthy": "32",
    "Completed": "32",
    "Successful": "32",
    "Init": "36",
    "Migrating": "36",
    "Completing": "36",
    "True": "32",
    "Progressing": "36",
    "Running": "36",
    "Paused": "33",
    "Inconclusive": "33",
    "Pending": "2",
    "Degraded": "31",
    "Failed": "31",
    "Error": "31",
    "False": "31",
    DONE: "32",
    CURRENT: "1;36",
    PENDING: "2",
}


@dataclass(frozen=True)
class Paint:
    """ANSI styling, or none."""

    on: bool = False

    def __call__(self, text: str, style: str) -> str:
        return f"\x1b[{style}m{text}\x1b[0m" if self.on and style and text else text

    def auto(self, text: str) -> str:
        """Styled by meaning: phases, condition statuses, step marks."""
        return self(text, _STYLES.get(text, ""))

    def bold(self, text: str) -> str:
        return self(text, "1")


# A table cell: plain text, or (text, style); style "" styles by meaning (`Paint.auto`).
Col = str | tuple[str, str]


def table(
    rows: Sequence[Sequence[Col]],
    paint: Paint,
    *,
    indent: str = "  ",
    right: frozenset[int] = frozenset(),
) -> list[str]:
    """Aligned columns; widths from the plain text, so colour never skews them."""
    plain = [[c if isinstance(c, str) else c[0] for c in row] for row in rows]
    widths: dict[int, int] = {}
    for texts in plain:
        for i, text in enumerate(texts):
            widths[i] = max(widths.get(i, 0), len(text))
    out = []
    for row, texts in zip(rows, plain, strict=True):
        parts = []
        for i, (c, text) in enumerate(zip(row, texts, strict=True)):
            pad = " " * (widths[i] - len(text))
            styled = text if isinstance(c, str) else paint(text, c[1]) if c[1] else paint.auto(text)
            if i == len(row) - 1 and i not in right:
                parts.append(styled)
            else:
                parts.append(pad + styled if i in right else styled + pad)
        out.append((indent + "  ".join(parts)).rstrip())
    return out


def age(then: datetime.datetime | None, now: datetime.datetime) -> str:
    """How long ago, the way kubectl prints ages (`45s`, `3m12s`, `2h`, `4d`)."""
    if then is None:
        return "-"
    return duration((now - then).total_seconds())


def duration(seconds: float) -> str:
    s = max(0, int(seconds))
    m, h, d = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if h < 3:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 730:
        return f"{d}d"
    return f"{d // 365}y"


def describe_step(step: CanaryStep | BlueGreenStep) -> str:
    """`setWeight 20`, `stepWeight 10`, `pause 5m`, `analysis success-rate`; BlueGreen's
    `analysis ...` and `promote`."""
    if isinstance(step, BlueGreenStep):
        if step.analysis is None:
            return "promote: all traffic to the new version"
        return "analysis " + ", ".join(t.template_name for t in step.analysis.templates)
    if step.set_weight is not None:
        return f"setWeight {step.set_weight}"
    if step.step_weight is not None:
        return f"stepWeight {step.step_weight}"
    if step.pause is not None:
        d = step.pause.duration
        if d is None or d == "":
            return "pause (until promoted)"
        return f"pause {d}s" if isinstance(d, int) or d.isdigit() else f"pause {d}"
    if step.analysis is not None:
        names = [
            t.template_name + (" (cluster)" if t.cluster_scope else "")
            for t in step.analysis.templates
        ]
        return "analysis " + ", ".join(names)
    return "(unknown step)"


def pause_seconds(step: CanaryStep) -> float | None:
    d = step.pause.duration if step.pause else None
    if d is None or d == "":
        return None
    if isinstance(d, int) or d.isdigit():
        return float(d)
    try:
        return parse_duration(d)
    except ValueError:
        return None


def step_label(index: int | None, total: int) -> str:
    """`2/4` for index 1 of 4 steps; `done` past the last; `-` without a rollout."""
    if index is None:
        return "-"
    return f"{index + 1}/{total}" if index < total else "done"


def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def _run_phase(run: Obj | None) -> str:
    return ((run or {}).get("status") or {}).get("phase") or "Pending"


# -- the Cell view -------------------------------------------------------------


def render_cell(
    cell: Obj,
    target_groups: Sequence[Obj],
    config: Obj | None,
    runs: Sequence[Obj],
    blocklist: Obj | None,
    now: datetime.datetime,
    *,
    color: bool = False,
) -> str:
    """The readable view of one Cell (`okra get cell NAME`)."""
    paint = Paint(color)
    model = Cell.model_validate(cell)
    st = model.status or CellStatus()
    runs_by_name = {_meta(r).get("name", ""): r for r in runs}
    weights = _weights(model, config)
    grouped = group_target_groups(
        (
            (
                _meta(t).get("name", ""),
                (t.get("spec") or {}).get("arn", ""),
                _meta(t).get("labels") or {},
            )
            for t in target_groups
        ),
        model.spec.labels_for_version(),
    )
    version_of = {tg.arn: v for v, tgs in grouped.by_version.items() for tg in tgs}

    def weight_of(version: str | None) -> int:
        return sum(w for arn, w in weights.items() if version_of.get(arn) == version)

    lines = _header(cell, model, st, paint, now, weight_of)
    lines.append("")
    lines += _target_groups(model, st, grouped, weights, config, paint, now)
    lines.append("")
    if seen := traffic_lines(st, paint, lambda t: age(t, now)):
        lines += [*seen, ""]
    lines += _steps(model, st, runs_by_name, config, paint, now)
    lines.append("")
    lines += _runs(runs, st, paint, now)
    lines.append("")
    lines += _blocked(blocklist, paint, now)
    lines.append("")
    lines += _conditions(st, paint, now)
    return "\n".join(lines) + "\n"


def _weights(model: Cell, config: Obj | None) -> dict[str, int]:
    """arn -> weight: the config's desired weights, else the Cell's last report."""
    if config is not None:
        return {
            str(f.get("arn")): int(f.get("weight") or 0)
            for f in (config.get("spec") or {}).get("forwardTargetGroups") or []
        }
    st = model.status or CellStatus()
    return {t.arn: t.weight for t in st.target_groups or []}


def _header(
    raw: Obj,
    model: Cell,
    st: CellStatus,
    paint: Paint,
    now: datetime.datetime,
    weight_of: Callable[[str | None], int],
) -> list[str]:
    meta = model.metadata
    lines = [
        f"{paint.bold('Cell:')}     {paint.bold(meta.name)}   (namespace {meta.namespace}, "
        f"age {age(created(raw), now)})",
    ]
    phase = st.phase or "Pending"
    message = st.message or ("not reconciled yet" if not st.phase else "")
    health = f" ({paint.auto(st.health)})" if st.health else ""
    lines.append(f"Phase:    {paint.auto(phase)}{health}" + (f"  {message}" if message else ""))
    gen = meta.generation
    if st.observed_generation is not None and gen is not None and st.observed_generation < gen:
        lines.append(
            f"          (status is for generation {st.observed_generation}; "
            f"the spec is at {gen} and not yet reconciled)"
        )
    stable = st.stable_version
    lines.append(f"Stable:   {stable}  {weight_of(stable)}%" if stable else "Stable:   none yet")
    if st.canary_version:
        extra = [f"rollout {st.rollout_id}"] if st.rollout_id else []
        if st.step_started_at:
            extra.append(f"step started {age(st.step_started_at, now)} ago")
        note = f"  ({', '.join(extra)})" if extra else ""
        lines.append(f"Canary:   {st.canary_version}  {weight_of(st.canary_version)}%{note}")
        if st.aborted:
            lines.append(
                f"          {paint('ABORTED', '1;31')}: all traffic on {stable}; "
                f"okra retry {meta.name} resumes"
            )
    else:
        lines.append("Canary:   none")
    if model.spec.version:
        lines.append(f"Pinned:   spec.version {model.spec.version}")
    return lines


def read_age(config: Obj | None, now: datetime.datetime) -> str | None:
    """How long ago okra read from AWS what the config's status says (`lastReadTime`,
    `42s`); None when the status does not say (written by an older okra)."""
    when = parse_time(((config or {}).get("status") or {}).get("lastReadTime"))
    return age(when, now) if when else None


def _sync_state(
    config: Obj | None, now: datetime.datetime, kind: str = ALB_CONFIG_KIND
) -> tuple[bool, str]:
    """Whether AWS showed the config's weights when okra last read them, and a phrase
    saying so and how old that reading is (AWS may have changed since: a hand edit shows
    at okra's next look); `kind` is the kind of config the Cell has (`config_kind`)."""
    if config is None:
        return False, f"no {kind} yet"
    name = _meta(config).get("name")
    st = config.get("status") or {}
    cond = next((c for c in st.get("conditions") or [] if c.get("type") == "Synced"), None)
    gen, observed = _meta(config).get("generation"), st.get("observedGeneration")
    where = f"{kind} {name}"
    if cond is None:
        return False, f"{where}: not applied to AWS yet"
    read = read_age(config, now)
    seen = f"read from AWS {read} ago" if read else "read from AWS at a time not recorded"
    if cond.get("status") == "True" and observed == gen:
        when = parse_time(st.get("lastAppliedTime"))
        ago = f", applied {age(when, now)} ago" if when else ""
        return True, f"{where}: Synced (AWS showed these weights when {seen}{ago})"
    if cond.get("status") == "True":
        return False, (
            f"{where}: applying generation {gen} (AWS showed generation {observed} when {seen})"
        )
    why = ": ".join(x for x in (cond.get("reason"), cond.get("message")) if x)
    return False, f"{where}: not synced" + (f" ({why})" if why else "")


def _target_groups(
    model: Cell,
    st: CellStatus,
    grouped: Grouped,
    weights: dict[str, int],
    config: Obj | None,
    paint: Paint,
    now: datetime.datetime,
) -> list[str]:
    synced, state = _sync_state(config, now, config_kind(model))
    lines = [f"{paint.bold('Target groups')}  {paint(state, '' if synced else '33')}"]
    applied = {
        str(f.get("arn")): int(f.get("weight") or 0)
        for f in (((config or {}).get("status") or {}).get("applied") or {}).get(
            "forwardTargetGroups"
        )
        or []
    }
    records = (((config or {}).get("status") or {}).get("applied") or {}).get("records") or []
    if records:  # Route 53: one weighted record per target group, named by it
        arn_of = {tg.name: tg.arn for group in grouped.by_version.values() for tg in group}
        for r in records:
            sid = str(r.get("setIdentifier"))
            applied[arn_of.get(sid, sid)] = int(r.get("weight") or 0)
    has_applied = bool(((config or {}).get("status") or {}).get("applied"))

    def aws(arn: str) -> Col:
        if config is None:
            return "-"
        if synced:
            return (DONE, "")
        if has_applied:
            return (str(applied.get(arn, 0)), "33")
        return ("…", "33")

    def weight(arn: str) -> str:
        return str(weights[arn]) if arn in weights else "-"

    read = read_age(config, now)
    aws_column = f"AWS ({read} ago)" if read and (synced or has_applied) else "AWS"

    rows: list[list[Col]] = [
        [("VERSION", "2"), ("NAME", "2"), ("WEIGHT", "2"), (aws_column, "2"), ("ARN", "2")]
    ]
    seen: set[str] = set()
    replicas = model.spec.replicas
    for v in grouped.versions:
        have = len(grouped.by_version[v.text])
        role = (
            " (stable)"
            if v.text == st.stable_version
            else " (canary)"
            if v.text == st.canary_version
            else f" (waiting: {have} of {replicas} target groups)"
            if have < replicas and not model.spec.version
            else ""
        )
        for n, tg in enumerate(grouped.by_version[v.text]):
            seen.add(tg.arn)
            rows.append(
                [v.text + role if n == 0 else "", tg.name, weight(tg.arn), aws(tg.arn), tg.arn]
            )
    version_labels = model.spec.labels_for_version()
    for name, value in grouped.unparsable:
        rows.append([(f"{value} (not a version)", "31"), name, "-", "", ""])
    for name in grouped.unlabelled:
        rows.append([(f"(no {version_labels[0]} label)", "31"), name, "-", "", ""])
    for f in ((config or {}).get("spec") or {}).get("forwardTargetGroups") or []:
        arn = str(f.get("arn"))
        if arn not in seen:
            rows.append(
                [("(no AWSTargetGroup)", "33"), str(f.get("name")), weight(arn), aws(arn), arn]
            )
    if len(rows) == 1:
        sel = ", ".join(f"{k}={v}" for k, v in sorted(_selector(model).items())) or "(empty)"
        lines.append(f"  none match the selector {sel}")
        return lines
    return lines + table(rows, paint, right=frozenset({2}))


def _selector(model: Cell) -> dict[str, str]:
    ingress = model.spec.ingress
    if ingress is None:
        return {}
    lb = ingress.aws_application_load_balancer or ingress.aws_network_load_balancer
    return dict(lb.target_group_selector.match_labels) if lb else {}


def _steps(
    model: Cell,
    st: CellStatus,
    runs: dict[str, Obj],
    config: Obj | None,
    paint: Paint,
    now: datetime.datetime,
) -> list[str]:
    canary = model.spec.update_strategy.canary
    blue_green = model.spec.update_strategy.blue_green
    in_progress = bool(st.canary_version and st.rollout_id)
    if model.spec.update_strategy.type == "BlueGreen" and blue_green is not None:
        return _blue_green_steps(blue_green.steps, st, runs, paint, in_progress)
    steps = list(canary.steps) if canary else []
    background = canary.analysis if canary else None
    name = model.metadata.name
    if not steps and background is None:
        return [f"{paint.bold('Steps:')}    none (a new version gets all traffic at once)"]
    i = (st.current_step_index or 0) if in_progress else None
    if i is None:
        head = f"{paint.bold('Steps:')}    no rollout in progress ({len(steps)} steps per rollout)"
    elif i >= len(steps):
        head = (
            f"{paint.bold('Steps:')}    {len(steps)}/{len(steps)} done, "
            f"shifting all traffic to {st.canary_version}"
        )
    else:
        head = f"{paint.bold('Steps:')}    {step_label(i, len(steps))}"
    lines = [head]
    rows: list[list[Col]] = []
    for n, step in enumerate(steps):
        mark = PENDING if i is None or n > i else DONE if n < i else CURRENT
        text = describe_step(step)
        if step.set_weight is not None or step.step_weight is not None:
            text += f" → canary {weight_before(steps, n + 1)}%"
        note: Col = ""
        if mark == CURRENT:
            note = _current_note(step, n, st, runs, config, name, now)
        rows.append([(mark, ""), f"{n + 1}.", text, note])
    lines += table(rows, paint)
    if background is not None:
        templates = ", ".join(t.template_name for t in background.templates)
        start = (background.starting_step or 0) + 1
        text = f"  background analysis {templates}, from step {start}"
        run_name = (st.analysis_runs or {}).get("background") if in_progress else None
        if run_name:
            phase = _run_phase(runs.get(run_name))
            text += f": {run_name} {paint.auto(phase)}"
        lines.append(text)
    return lines


def _blue_green_steps(
    steps: Sequence[BlueGreenStep],
    st: CellStatus,
    runs: dict[str, Obj],
    paint: Paint,
    in_progress: bool,
) -> list[str]:
    """BlueGreen: the new version gets no traffic until `promote` (or the last step)."""
    if not steps:
        return [f"{paint.bold('Steps:')}    none (BlueGreen: the new version gets all at once)"]
    i = (st.current_step_index or 0) if in_progress else None
    head = f"{paint.bold('Steps:')}    " + (
        f"no rollout in progress ({len(steps)} BlueGreen steps per rollout)"
        if i is None
        else f"BlueGreen {step_label(i, len(steps))}"
    )
    rows: list[list[Col]] = []
    for n, step in enumerate(steps):
        mark = PENDING if i is None or n > i else DONE if n < i else CURRENT
        text = describe_step(step)
        note: Col = ""
        if mark == CURRENT and step.analysis is not None:
            note = _analysis_note(n, st, runs)
        rows.append([(mark, ""), f"{n + 1}.", text, note])
    return [head, *table(rows, paint)]


def _analysis_note(index: int, st: CellStatus, runs: dict[str, Obj]) -> Col:
    run_name = (st.analysis_runs or {}).get(f"step-{index}")
    if not run_name:
        return "starting analysis"
    phase = _run_phase(runs.get(run_name))
    return (f"{run_name}: {phase}", _STYLES.get(phase, ""))


def _current_note(
    step: CanaryStep,
    index: int,
    st: CellStatus,
    runs: dict[str, Obj],
    config: Obj | None,
    name: str,
    now: datetime.datetime,
) -> Col:
    if st.aborted:
        return ("aborted", "31")
    if st.paused_reason == "Inconclusive":
        return (
            f"inconclusive: okra promote {name} continues, okra abort {name} rolls back",
            "33",
        )
    if step.set_weight is not None or step.step_weight is not None:
        synced, _ = _sync_state(config, now)
        if not synced:
            return ("waiting for AWS to apply the weights", "33")
        read = read_age(config, now)
        return f"AWS showed the weights {read} ago" if read else "AWS showed the weights"
    if step.pause is not None:
        seconds = pause_seconds(step)
        if seconds is None:
            return (f"paused until promoted (okra promote {name})", "33")
        if st.step_started_at is None:
            return ("paused", "33")
        left = (st.step_started_at - now).total_seconds() + seconds
        return (f"paused, {duration(left)} left", "33") if left > 0 else "pause over, continuing"
    if step.analysis is not None:
        return _analysis_note(index, st, runs)
    return ""


def _run_role(run: Obj, st: CellStatus) -> str:
    name = _meta(run).get("name")
    for key, value in (st.analysis_runs or {}).items():
        if value == name:
            return "background" if key == "background" else _step_key(key)
    labels = _meta(run).get("labels") or {}
    if labels.get("okra.mumo.co/background") == "true":
        return "background"
    suffix = str(name).rsplit("-", 2)
    if len(suffix) == 3 and suffix[1] == "step" and suffix[2].isdigit():
        return _step_key(f"step-{suffix[2]}")
    return "-"


def _step_key(key: str) -> str:
    _, _, n = key.partition("-")
    return f"step {int(n) + 1}" if n.isdigit() else key


def _measurement(m: Measurement) -> str:
    value = m.value if m.value not in (None, "") else "-"
    if len(value) > 40:
        value = value[:39] + "…"
    return f"{value} ({m.phase})"


def _runs(runs: Sequence[Obj], st: CellStatus, paint: Paint, now: datetime.datetime) -> list[str]:
    if not runs:
        return [f"{paint.bold('Analysis runs:')} none"]
    lines = [paint.bold("Analysis runs")]
    shown = list(runs[:MAX_RUNS])
    rows: list[list[Col]] = [
        [("NAME", "2"), ("FOR", "2"), ("PHASE", "2"), ("AGE", "2"), ("MESSAGE", "2")]
    ]
    statuses = []
    for r in shown:
        try:
            status = AnalysisRunStatus.model_validate(r.get("status") or {})
        except ValueError:
            status = AnalysisRunStatus()
        statuses.append(status)
        rows.append(
            [
                _meta(r).get("name", ""),
                _run_role(r, st),
                (status.phase or "Pending", ""),
                age(created(r), now),
                status.message or "",
            ]
        )
    head, *body = table(rows, paint)
    lines.append(head)
    for row_line, status in zip(body, statuses, strict=True):
        lines.append(row_line)
        metric_rows: list[list[Col]] = []
        for result in status.metric_results or []:
            latest = result.measurements[-MAX_MEASUREMENTS:]
            measured = (
                ", ".join(_measurement(m) for m in latest) if latest else "no measurement yet"
            )
            if len(result.measurements) > len(latest) or result.count > len(latest):
                measured = f"… {measured}"
            dry = " (dry run)" if result.dry_run else ""
            metric_rows.append([f"{result.name}{dry}", (result.phase or "Pending", ""), measured])
        lines += table(metric_rows, paint, indent="      ")
    if len(runs) > len(shown):
        lines.append(f"  … and {len(runs) - len(shown)} older run(s)")
    return lines


def _blocked(blocklist: Obj | None, paint: Paint, now: datetime.datetime) -> list[str]:
    items = ((blocklist or {}).get("spec") or {}).get("items") or []
    if not items:
        return [f"{paint.bold('Blocked versions:')} none"]
    name = _meta(blocklist).get("name")
    lines = [f"{paint.bold('Blocked versions')}  (VersionBlocklist {name})"]
    rows: list[list[Col]] = []
    for item in items:
        when = parse_time(item.get("time"))
        rows.append(
            [
                (str(item.get("version")), "31"),
                f"{age(when, now)} ago" if when else "",
                str(item.get("cause") or ""),
            ]
        )
    return lines + table(rows, paint)


def _conditions(st: CellStatus, paint: Paint, now: datetime.datetime) -> list[str]:
    if not st.conditions:
        return [f"{paint.bold('Conditions:')} none"]
    rows: list[list[Col]] = [
        [("TYPE", "2"), ("STATUS", "2"), ("REASON", "2"), ("AGE", "2"), ("MESSAGE", "2")]
    ]
    for c in st.conditions:
        rows.append([c.type, c.status, c.reason, age(c.last_transition_time, now), c.message])
    return [paint.bold("Conditions"), *table(rows, paint)]


# -- tables --------------------------------------------------------------------


def cell_row(c: Obj, now: datetime.datetime) -> list[str]:
    """NAME, PHASE, HEALTH, STABLE, CANARY, WEIGHT, STEP, AGE of one Cell."""
    st = c.get("status") or {}
    canary = ((c.get("spec") or {}).get("updateStrategy") or {}).get("canary") or {}
    total = len(canary.get("steps") or [])
    index = st.get("currentStepIndex") if st.get("canaryVersion") else None
    weight = st.get("canaryWeight")
    return [
        str(_meta(c).get("name")),
        st.get("phase") or "Pending",
        st.get("health") or "-",
        st.get("stableVersion") or "-",
        st.get("canaryVersion") or "-",
        "-" if weight is None or not st.get("canaryVersion") else str(weight),
        step_label(index, total) if total else "-",
        age(created(c), now),
    ]


def render_cells(
    cells: Sequence[Obj],
    now: datetime.datetime,
    *,
    color: bool = False,
    namespaces: bool = False,
    wide: bool = False,
) -> str:
    """`okra get cells`: one line per Cell; `namespaces` adds a NAMESPACE column (`-A`),
    `wide` the listener and the status message."""
    paint = Paint(color)
    head = ["NAME", "PHASE", "HEALTH", "STABLE", "CANARY", "WEIGHT", "STEP", "AGE"]
    rows: list[list[Col]] = [
        [*(["NAMESPACE"] if namespaces else []), *head, *(["LISTENER", "MESSAGE"] if wide else [])]
    ]
    for c in sorted(
        cells, key=lambda c: (str(_meta(c).get("namespace")), str(_meta(c).get("name")))
    ):
        name, phase, health, *rest = cell_row(c, now)
        extra: list[Col] = []
        if wide:
            ingress = (c.get("spec") or {}).get("ingress") or {}
            lb = ingress.get("awsApplicationLoadBalancer") or ingress.get("awsNetworkLoadBalancer")
            listener = str((lb or {}).get("listenerARN") or "-")
            if ingress.get("type") == "AWSRoute53":  # the weighted name, not a listener
                listener = str((ingress.get("awsRoute53") or {}).get("recordName") or "-")
            extra = [listener.rsplit("/", 3)[-3] if "/" in listener else listener]
            extra.append(str((c.get("status") or {}).get("message") or "-"))
        rows.append(
            [
                *([str(_meta(c).get("namespace"))] if namespaces else []),
                name,
                (phase, ""),
                (health, ""),
                *rest,
                *extra,
            ]
        )
    if len(rows) == 1:
        return "No cells found.\n"
    return "\n".join(table(rows, paint, indent="")) + "\n"


def target_group_rows(
    target_groups: Sequence[Obj], cells: Sequence[Obj], configs: Sequence[Obj]
) -> list[tuple[str, str, str, str, str]]:
    """(name, version, cell, weight, arn) per target group. The version is read with
    the labels of the first Cell selecting it (default label otherwise), the weight
    from that Cell's load balancer config (`-` when not in it)."""
    config_by_name = {(_meta(c).get("namespace"), _meta(c).get("name")): c for c in configs}
    out = []
    for tg in sorted(target_groups, key=lambda t: str(_meta(t).get("name"))):
        arn = str((tg.get("spec") or {}).get("arn") or "")
        labels = _meta(tg).get("labels") or {}
        ns = _meta(tg).get("namespace")
        owner = next(
            (
                c
                for c in cells
                if _meta(c).get("namespace") in (ns, None) and selects(cell_selector(c), tg)
            ),
            None,
        )
        version_labels = [DEFAULT_VERSION_LABEL]
        if owner is not None:
            with contextlib.suppress(ValueError):
                version_labels = Cell.model_validate(owner).spec.labels_for_version()
        version = next((labels[k] for k in version_labels if k in labels), "-")
        weight = "-"
        cell_name = "-"
        if owner is not None:
            cell_name = str(_meta(owner).get("name"))
            config = config_by_name.get((_meta(owner).get("namespace"), cell_name)) or {}
            for f in (config.get("spec") or {}).get("forwardTargetGroups") or []:
                if f.get("arn") == arn:
                    weight = str(f.get("weight"))
        out.append((str(_meta(tg).get("name")), version, cell_name, weight, arn))
    return out


def render_target_groups(
    target_groups: Sequence[Obj],
    cells: Sequence[Obj],
    configs: Sequence[Obj],
    *,
    show_cell: bool = True,
    color: bool = False,
    namespaces: bool = False,
    wide: bool = False,
) -> str:
    """`okra get targetgroups`: (namespace,) name, version, (cell,) weight in the config,
    ARN; `wide` adds the labels."""
    rows: list[list[Col]] = [
        [
            *(["NAMESPACE"] if namespaces else []),
            "NAME",
            "VERSION",
            *(["CELL"] if show_cell else []),
            "WEIGHT",
            "ARN",
            *(["LABELS"] if wide else []),
        ]
    ]
    by_name = {(_meta(t).get("namespace"), str(_meta(t).get("name"))): t for t in target_groups}
    ordered = sorted(
        target_groups, key=lambda t: (str(_meta(t).get("namespace")), str(_meta(t).get("name")))
    )
    for tg in ordered:
        ns = _meta(tg).get("namespace")
        for name, version, cell, weight, arn in target_group_rows([tg], cells, configs):
            labels = _meta(by_name[(ns, name)]).get("labels") or {}
            rows.append(
                [
                    *([str(ns)] if namespaces else []),
                    name,
                    version,
                    *([cell] if show_cell else []),
                    weight,
                    arn,
                    *(
                        [",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "-"]
                        if wide
                        else []
                    ),
                ]
            )
    if len(rows) == 1:
        return "No target groups found.\n"
    return "\n".join(table(rows, Paint(color), indent="")) + "\n"


ARGOCD_SECRET_TYPE = "argocd.argoproj.io/secret-type"


def cluster_rows(secrets: Sequence[Obj]) -> list[dict[str, object]]:
    """What `okra get clusters` shows of each Argo CD cluster Secret: its name, the cluster's
    name and server (decoded from data or stringData), its labels without Argo CD's type
    label, and the ClusterSet that owns it. Never the `config` (it holds credentials)."""
    out: list[dict[str, object]] = []
    for s in sorted(secrets, key=lambda s: str(_meta(s).get("name"))):
        meta = _meta(s)
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != ARGOCD_SECRET_TYPE}
        owner = next(
            (
                r.get("name")
                for r in meta.get("ownerReferences") or []
                if r.get("kind") == "ClusterSet" and r.get("controller")
            ),
            None,
        )
        out.append(
            {
                "name": meta.get("name"),
                "cluster": _secret_field(s, "name"),
                "server": _secret_field(s, "server"),
                "labels": labels,
                "clusterSet": owner,
            }
        )
    return out


def _secret_field(secret: Obj, key: str) -> str | None:
    plain = (secret.get("stringData") or {}).get(key)
    if plain is not None:
        return str(plain)
    encoded = (secret.get("data") or {}).get(key)
    if encoded is None:
        return None
    try:
        return base64.b64decode(encoded).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def render_clusters(
    secrets: Sequence[Obj], *, color: bool = False, namespaces: bool = False
) -> str:
    """`okra get clusters`: one line per Argo CD cluster Secret."""
    paint = Paint(color)
    head = ["NAME", "CLUSTER", "SERVER", "CLUSTERSET", "LABELS"]
    rows: list[list[Col]] = [[*(["NAMESPACE"] if namespaces else []), *head]]
    ns_of = {str(_meta(s).get("name")): str(_meta(s).get("namespace")) for s in secrets}
    for r in cluster_rows(secrets):
        labels = r["labels"]
        assert isinstance(labels, dict)
        rows.append(
            [
                *([ns_of.get(str(r["name"]), "-")] if namespaces else []),
                str(r["name"]),
                str(r["cluster"] or "-"),
                str(r["server"] or "-"),
                str(r["clusterSet"] or "-"),
                ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "-",
            ]
        )
    if len(rows) == 1:
        return "No clusters found.\n"
    return "\n".join(table(rows, paint, indent="")) + "\n"


# -- analysis runs -----------------------------------------------------------------


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
