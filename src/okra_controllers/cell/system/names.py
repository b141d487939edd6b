"""Names and labels of what a system Cell makes: its applications' Cells, their
AWSTargetGroups and Checks, and the labels it puts on Argo CD cluster Secrets."""

from __future__ import annotations

import hashlib
import re

from okra_controllers.api.v1alpha1.common import APP_LABEL as APP_LABEL
from okra_controllers.api.v1alpha1.common import GROUP
from okra_controllers.api.v1alpha1.common import SYSTEM_LABEL as SYSTEM_LABEL

CHECK_LABEL = f"{GROUP}/check"
"""On a Check the system Cell makes: the name of the application's check it runs."""
VERSION_PREFIX = "v"
SPEC_HASH = f"{GROUP}/spec-hash"
"""On an application's Cell: the hash of the spec the system Cell last applied to it (what
okra owns of it). A spec the system derives with a field left out hashes differently, so
it is applied again, and the API server removes the field okra no longer states."""


def version_key(system: str, app: str) -> str:
    """The label carrying the version (`v<N>`) of an application's cluster set, on its
    AWSTargetGroups and its clusters' Argo CD Secrets (one key per system and application:
    a cluster serving two applications carries both)."""
    return f"{app}.{system}.{GROUP}/version"


def member_key(system: str, app: str) -> str:
    """On an Argo CD cluster Secret: the cluster is one of the application's."""
    return f"{app}.{system}.{GROUP}/member"


def child_name(system: str, app: str) -> str:
    return f"{system}-{app}"


def dns(name: str, *parts: str, limit: int = 253) -> str:
    """`name` and `parts` joined with `-` as a DNS subdomain name (lowercase, `_` to `-`);
    a hash suffix keeps it unique when it has to be cut."""
    raw = "-".join((name, *parts))
    out = re.sub(r"[^a-z0-9.-]", "-", raw.lower()).strip("-.")
    if len(out) <= limit and out == raw:
        return out
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    return f"{out[: limit - 9].rstrip('-.')}-{digest}"


def version_number(version: str | None) -> int:
    if version and version.startswith(VERSION_PREFIX) and version[1:].isdigit():
        return int(version[1:])
    return 0
