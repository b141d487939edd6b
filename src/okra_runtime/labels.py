"""Label selectors, in both of Kubernetes' spellings: the string form
(`app=web,tier!=db,env in (prod,staging),!legacy`) and the structured form
(`{"matchLabels": {...}, "matchExpressions": [...]}`), and what a label value may be."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_VALUE_RULE = (
    "at most 63 characters: alphanumerics, '-', '_', '.', starting and ending alphanumeric"
)


def valid_label_value(value: str) -> bool:
    """Whether the API server accepts `value` as a label value (empty is allowed)."""
    return len(value) <= 63 and _LABEL_VALUE.match(value) is not None


Op = Literal["In", "NotIn", "Exists", "DoesNotExist"]


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: Op
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "Exists":
            return self.key in labels
        if self.op == "DoesNotExist":
            return self.key not in labels
        if self.op == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values  # NotIn


@dataclass(frozen=True, slots=True)
class Selector:
    """All requirements must hold. The empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def equality_pairs(self) -> list[tuple[str, str]]:
        """`key=value` requirements, which a label index can answer directly."""
        return [
            (r.key, next(iter(r.values)))
            for r in self.requirements
            if r.op == "In" and len(r.values) == 1
        ]

    def __str__(self) -> str:
        parts = []
        for r in self.requirements:
            vals = ",".join(sorted(r.values))
            if r.op == "Exists":
                parts.append(r.key)
            elif r.op == "DoesNotExist":
                parts.append(f"!{r.key}")
            elif r.op == "In":
                parts.append(f"{r.key}={vals}" if len(r.values) == 1 else f"{r.key} in ({vals})")
            else:
                parts.append(
                    f"{r.key}!={vals}" if len(r.values) == 1 else f"{r.key} notin ({vals})"
                )
        return ",".join(parts)


_TERM = re.compile(
    r"""\s*(?:
        (?P<not>!)\s*(?P<nkey>[\w./-]+)
      | (?P<skey>[\w./-]+)\s*(?P<setop>in|notin)\s*\((?P<vals>[^)]*)\)
      | (?P<ekey>[\w./-]+)\s*(?P<eop>==|=|!=)\s*(?P<eval>[\w./-]*)
      | (?P<xkey>[\w./-]+)
    )\s*(?:,|$)""",
    re.VERBOSE,
)


def parse_selector(text: str) -> Selector:
    """Parse the string form; raises ValueError naming the bad part."""
    reqs: list[Requirement] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _TERM.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"invalid label selector {text!r} at {text[pos:]!r}")
        if m["not"]:
            reqs.append(Requirement(m["nkey"], "DoesNotExist"))
        elif m["setop"]:
            vals = frozenset(v.strip() for v in m["vals"].split(",") if v.strip())
            reqs.append(Requirement(m["skey"], "In" if m["setop"] == "in" else "NotIn", vals))
        elif m["eop"]:
            op: Op = "NotIn" if m["eop"] == "!=" else "In"
            reqs.append(Requirement(m["ekey"], op, frozenset({m["eval"]})))
        else:
            reqs.append(Requirement(m["xkey"], "Exists"))
        pos = m.end()
    return Selector(tuple(reqs))


def selector_from_dict(spec: Mapping[str, Any] | None) -> Selector:
    """Build from a LabelSelector object (`matchLabels` / `matchExpressions`)."""
    if not spec:
        return Selector()
    reqs = [
        Requirement(k, "In", frozenset({str(v)}))
        for k, v in sorted((spec.get("matchLabels") or {}).items())
    ]
    for expr in spec.get("matchExpressions") or []:
        op = expr.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(
                f"matchExpressions: unknown operator {op!r} for key {expr.get('key')!r}"
            )
        values = frozenset(str(v) for v in expr.get("values") or [])
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"matchExpressions: operator {op} on {expr.get('key')!r} needs values")
        reqs.append(Requirement(str(expr["key"]), op, values))
    return Selector(tuple(reqs))


def as_selector(selector: Selector | str | Mapping[str, Any] | None) -> Selector:
    if selector is None:
        return Selector()
    if isinstance(selector, Selector):
        return selector
    if isinstance(selector, str):
        return parse_selector(selector)
    return selector_from_dict(selector)
