"""The observed split of a Cell's last traffic reading (`status.traffic`), for
`okra get cell`: beside the weights AWS shows, what the target groups served."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Protocol

from okra_controllers.api.v1alpha1.cell import CellStatus


class Painter(Protocol):
    def __call__(self, text: str, style: str) -> str: ...
    def bold(self, text: str) -> str: ...


STYLE = {
    "Confirmed": "32",
    "Diverged": "1;31",
    "Failed": "1;31",
    "NotEnoughTraffic": "33",
    "Unavailable": "33",
    "Waiting": "36",
}


def traffic_lines(
    st: CellStatus, paint: Painter, ago: Callable[[datetime.datetime], str]
) -> list[str]:
    """`Traffic:` and one line per version (planned and observed share, requests);
    none for a Cell without a reading. `ago` writes how long ago a time was."""
    t = st.traffic
    if t is None:
        return []
    step = t.step.rsplit("/", 1)[-1]
    where = f"step {int(step) + 1}" if step.isdigit() else t.step
    lines = [
        f"{paint.bold('Traffic:')}  {paint(t.verdict, STYLE.get(t.verdict, ''))}  "
        f"({where}; AWS has shown its weights for {ago(t.since)})",
    ]
    if t.message:
        lines.append(f"          {t.message}")
    for v in t.versions:
        seen = f"{v.observed:g} %" if v.observed is not None else "-"
        lines.append(
            f"          {v.version:<12} as AWS shows them {v.planned:>3} %   "
            f"as traffic shows them {seen:>7}   ({v.requests:,} requests)"
        )
    if t.window_start and t.window_end:
        span = int((t.window_end - t.window_start).total_seconds())
        lines.append(f"          read over {span}s, ending {ago(t.window_end)} ago")
    return lines
