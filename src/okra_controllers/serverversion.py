"""The Kubernetes version okra-manager runs against, and whether okra supports it.

okra supports every Kubernetes minor Amazon EKS supports, extended support included
(`OLDEST_SUPPORTED`, docs/compatibility.md). Below it, a CRD's validation rules, a
field of server-side apply or a watch feature may be missing, and the failure would
show later in an odd place: okra-manager says so at start, in one line, and its
readiness says it for as long as it runs. A version it cannot read (a proxy that hides
`/version`) is logged and let be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from okra_runtime.client import Client
from okra_runtime.errors import ApiError

OLDEST_SUPPORTED = (1, 32)
"""The oldest Kubernetes minor okra supports: the oldest in Amazon EKS's extended support."""


@dataclass(frozen=True)
class ServerVersion:
    git_version: str
    """What the API server says of itself (`gitVersion`, e.g. `v1.32.9-eks-1b3e656`)."""
    minor: tuple[int, int] | None
    """(major, minor), or None when the answer does not say them."""

    @property
    def unsupported(self) -> str | None:
        """Why okra does not support this server, or None."""
        if self.minor is None or self.minor >= OLDEST_SUPPORTED:
            return None
        oldest = ".".join(map(str, OLDEST_SUPPORTED))
        return (
            f"Kubernetes {self.git_version} is older than {oldest}, the oldest minor okra "
            f"supports: its CRDs, server-side apply or watches may not behave as okra needs"
        )


def parse_version(body: Any) -> ServerVersion:
    """`GET /version`'s answer. EKS writes the minor with a `+` ("32+"); the digits count."""
    info = body if isinstance(body, dict) else {}
    git = str(info.get("gitVersion") or "unknown")
    major = re.match(r"\d+", str(info.get("major") or ""))
    minor = re.match(r"\d+", str(info.get("minor") or ""))
    if major is None or minor is None:
        found = re.match(r"v?(\d+)\.(\d+)", git)
        if found is None:
            return ServerVersion(git, None)
        return ServerVersion(git, (int(found[1]), int(found[2])))
    return ServerVersion(git, (int(major[0]), int(minor[0])))


async def server_version(client: Client) -> ServerVersion | None:
    """The API server's version, or None when it does not answer `/version`."""
    try:
        return parse_version(await client.request("GET", "/version"))
    except ApiError:
        return None
