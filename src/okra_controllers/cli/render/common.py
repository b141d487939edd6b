"""What every view shares: colour (`Paint`), tables, ages and durations, how a step is described."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.api.v1alpha1.strategy import BlueGreenStep, CanaryStep
from okra_controllers.cli.view import Obj

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


def held_by(st: CellStatus, name: str) -> str | None:
    """What holds a Paused Cell before its current step: a freeze (the freezes and until
    when, as condition Frozen says) or `okra pause`; None when nothing does."""
    if st.health != "Paused":
        return None
    if st.paused_reason == "Frozen":
        frozen = next((c for c in st.conditions or [] if c.type == "Frozen"), None)
        return f"held by {frozen.message}" if frozen and frozen.message else "held by a freeze"
    if st.paused_reason == "PausedByUser":
        return f"held by okra pause (okra promote {name} resumes)"
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
