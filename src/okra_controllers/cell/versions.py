"""Target groups grouped by version.

A target group's version is the value of the first label in the Cell's
version labels that it carries, read as semver (`v1.2.3`, `1.2`, `2`; a
leading `v` is fine, missing minor/patch count as 0). A value that does not
parse is reported and the target group ignored. Two of one version with the same
ARN count once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import semver


@dataclass(frozen=True, order=True)
class Version:
    parsed: semver.Version
    text: str

    def __str__(self) -> str:
        return self.text


def parse_version(text: str) -> Version | None:
    raw = text.strip()
    body = raw[1:] if raw[:1] in ("v", "V") else raw
    try:
        return Version(semver.Version.parse(body, optional_minor_and_patch=True), raw)
    except (ValueError, TypeError):
        return None


@dataclass(frozen=True)
class TargetGroup:
    name: str
    arn: str
    version: Version


@dataclass(frozen=True)
class Grouped:
    by_version: dict[str, list[TargetGroup]]  # version text -> target groups, sorted by name
    versions: list[Version]  # ascending
    unparsable: list[tuple[str, str]]  # (target group name, label value)
    unlabelled: list[str]


def group_target_groups(
    items: Iterable[tuple[str, str, dict[str, str]]], labels: Sequence[str]
) -> Grouped:
    """`items` are (name, arn, labels) of the Cell's target groups."""
    by_version: dict[str, list[TargetGroup]] = {}
    parsed: dict[str, Version] = {}
    unparsable: list[tuple[str, str]] = []
    unlabelled: list[str] = []
    for name, arn, tg_labels in items:
        value = next((tg_labels[k] for k in labels if k in tg_labels), None)
        if value is None:
            unlabelled.append(name)
            continue
        v = parse_version(value)
        if v is None:
            unparsable.append((name, value))
            continue
        # "v1" and "1.0.0" are the same version; the first spelling seen names it.
        key = next((t for t, p in parsed.items() if p.parsed == v.parsed), v.text)
        parsed.setdefault(key, v)
        by_version.setdefault(key, []).append(TargetGroup(name, arn, parsed[key]))
    for key, tgs in by_version.items():
        # two objects of one version naming one ARN are one target group (a system Cell
        # renaming the object of a cluster it kept leaves both for a moment)
        tgs.sort(key=lambda t: t.name)
        once: dict[str, TargetGroup] = {}
        for t in tgs:
            once.setdefault(t.arn or t.name, t)  # a cluster Secret has no ARN: by name
        by_version[key] = list(once.values())
    return Grouped(
        by_version,
        sorted(parsed.values(), key=lambda v: v.parsed),
        sorted(unparsable),
        sorted(unlabelled),
    )


def split_evenly(total: int, tgs: Sequence[TargetGroup]) -> list[tuple[TargetGroup, int]]:
    """`total` split across `tgs` (sorted by name), the remainder to the last."""
    if not tgs:
        return []
    share = total // len(tgs)
    out = [(tg, share) for tg in tgs]
    last, w = out[-1]
    out[-1] = (last, w + total - share * len(tgs))
    return out
