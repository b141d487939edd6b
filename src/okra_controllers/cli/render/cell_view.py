"""`okra get cell NAME`: one Cell in full: versions and target groups, weights as planned and as AWS
shows them, the steps with the current one marked, analysis runs, blocked versions, conditions."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

from okra_controllers.api.v1alpha1.analysis import AnalysisRunStatus, Measurement
from okra_controllers.api.v1alpha1.cell import Cell, CellStatus
from okra_controllers.api.v1alpha1.strategy import BlueGreenStep, CanaryStep
from okra_controllers.cell.observe import ALB_CONFIG_KIND, config_kind
from okra_controllers.cell.plan import weight_before
from okra_controllers.cell.versions import Grouped, group_target_groups
from okra_controllers.cli.render.common import (
    _STYLES,
    CURRENT,
    DONE,
    MAX_MEASUREMENTS,
    MAX_RUNS,
    PENDING,
    Col,
    Paint,
    _meta,
    _run_phase,
    age,
    describe_step,
    duration,
    held_by,
    pause_seconds,
    step_label,
    table,
)
from okra_controllers.cli.trafficview import traffic_lines
from okra_controllers.cli.view import Obj, created
from okra_runtime.timeutil import parse_time


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
    lines += blocked_lines(blocklist, paint, now)
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
            # a step a freeze holds the rollout before has not started: it was reached
            begun = (
                "reached" if st.health == "Paused" and st.paused_reason == "Frozen" else "started"
            )
            extra.append(f"step {begun} {age(st.step_started_at, now)} ago")
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
        by = held_by(st, name)
        head = f"{paint.bold('Steps:')}    {len(steps)}/{len(steps)} done" + (
            f"; the final 100% to {st.canary_version} waits: {by}"
            if by is not None and st.paused_reason == "Frozen"
            else f", shifting all traffic to {st.canary_version}"
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
            note = _current_note(step, n, steps, st, runs, config, name, now)
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


def _not_started(
    index: int,
    steps: Sequence[CanaryStep],
    st: CellStatus,
    config: Obj | None,
    by: str,
    now: datetime.datetime,
) -> str:
    """The note of a current step that has not begun, held `by` something: and, when AWS
    showed the weights okra wrote, that those are the weights of the steps before it."""
    note = f"not started, {by}"
    synced, _ = _sync_state(config, now)
    if not synced or st.canary_weight is None:
        return note
    before = [
        n
        for n in range(index)
        if steps[n].set_weight is not None or steps[n].step_weight is not None
    ]
    whose = "the weights"
    if before and weight_before(list(steps), index) == st.canary_weight:
        whose = f"step {before[-1] + 1}'s weights"
    read = read_age(config, now)
    return f"{note}; AWS showed {whose} (canary {st.canary_weight}%)" + (
        f" {read} ago" if read else ""
    )


def _current_note(
    step: CanaryStep,
    index: int,
    steps: Sequence[CanaryStep],
    st: CellStatus,
    runs: dict[str, Obj],
    config: Obj | None,
    name: str,
    now: datetime.datetime,
) -> Col:
    """What the current step is doing. A freeze holds the rollout only before a step that
    has not begun (its weights, Pause or run not there yet); `okra pause` holds a weight
    step whose weights okra has not written (the status' canaryWeight is not the step's)."""
    if st.aborted:
        return ("aborted", "31")
    if st.paused_reason == "Inconclusive":
        return (
            f"inconclusive: okra promote {name} continues, okra abort {name} rolls back",
            "33",
        )
    by = held_by(st, name)
    if by is not None and st.paused_reason == "Frozen":
        return (_not_started(index, steps, st, config, by, now), "33")
    if step.set_weight is not None or step.step_weight is not None:
        written = st.canary_weight in (None, weight_before(list(steps), index + 1))
        if not written:
            return (
                _not_started(index, steps, st, config, by or "its weights not written yet", now),
                "33",
            )
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


def blocked_lines(blocklist: Obj | None, paint: Paint, now: datetime.datetime) -> list[str]:
    """`okra get cell`'s lines of the Cell's VersionBlocklist: each version, how long ago
    it was blocked (`time`) and why (`cause`)."""
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
