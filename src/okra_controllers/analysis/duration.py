"""Go duration strings (`300ms`, `1.5h`, `2h45m`), as Argo Rollouts writes
`interval` and `initialDelay`."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in `text`; raises ValueError naming the string when it is not a Go duration."""
    s = text.strip()
    if s in ("0", ""):
        if s == "":
            raise ValueError("empty duration")
        return 0.0
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            raise ValueError(
                f"invalid duration {text!r}: use a number and a unit "
                "(ns, us, ms, s, m, h), e.g. 30s, 5m, 1h30m"
            )
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total
