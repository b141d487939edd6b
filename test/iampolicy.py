"""config/iam/policy.json, read the way IAM reads it (enough of it for okra's policy): which
actions its Allow statements grant, IAM wildcards and case-insensitivity included. Used by the
unit test that scans the code for AWS calls and by the e2e fixtures that see the calls the real
manager makes (through the counting proxy)."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

POLICY = Path(__file__).resolve().parents[1] / "config" / "iam" / "policy.json"

NO_PERMISSION_NEEDED = {"sts:GetCallerIdentity"}
"""Actions AWS allows to every principal; a policy listing them grants nothing."""


def load() -> dict[str, Any]:
    policy: dict[str, Any] = json.loads(POLICY.read_text())
    return policy


def statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = policy["Statement"]
    return out


def as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def allowed(policy: dict[str, Any], action: str) -> bool:
    """Some Allow statement's Action matches `action` (`service:Operation`)."""
    return any(
        fnmatch.fnmatchcase(action.lower(), pattern.lower())
        for s in statements(policy)
        if s["Effect"] == "Allow"
        for pattern in as_list(s["Action"])
    )


def missing(policy: dict[str, Any], actions: set[str]) -> set[str]:
    """The actions the policy does not grant (those needing no permission aside)."""
    return {a for a in actions if a not in NO_PERMISSION_NEEDED and not allowed(policy, a)}


def operation_allowed(policy: dict[str, Any], operation: str) -> bool:
    """An API operation seen on the wire (`ModifyRule`, without its service) is granted under
    some service prefix."""
    prefixes = {p.split(":")[0] for s in statements(policy) for p in as_list(s["Action"])}
    prefixes |= {a.split(":")[0] for a in NO_PERMISSION_NEEDED}
    return any(
        f"{prefix}:{operation}" in NO_PERMISSION_NEEDED or allowed(policy, f"{prefix}:{operation}")
        for prefix in prefixes
    )
