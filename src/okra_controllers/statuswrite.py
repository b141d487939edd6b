"""Writing a controller's status: the planned status over the object's, through the status
subresource, with the object's resourceVersion as the precondition.

Every controller that writes a status ends its pass the same way (Cell, system Cell,
ProgressiveRollout, Check, AnalysisRun, Pause): a status already as planned is not written;
one the API server refuses because the object changed (or is gone) is not retried here — the
controller requeues and plans again from what it then holds.
"""

from __future__ import annotations

from typing import Any

import structlog
from pydantic import BaseModel

from okra_runtime.client import Client
from okra_runtime.errors import ConflictError, NotFoundError

log = structlog.get_logger("okra.status")


async def write_status(client: Client, raw: dict[str, Any], status: BaseModel) -> bool:
    """Write `status` over `raw`'s (nothing when it is so already). False when the object
    changed since `raw` was read, or is gone; True once written, `raw` then holding the
    status and the metadata written."""
    new = status.model_dump(by_alias=True, exclude_none=True, mode="json")
    if raw.get("status") == new:
        return True
    try:
        updated = await client.update_status({**raw, "status": new})
    except (ConflictError, NotFoundError) as e:
        log.debug(
            "changed while reconciling; planning again",
            kind=raw.get("kind"),
            namespace=raw["metadata"].get("namespace"),
            name=raw["metadata"].get("name"),
            reason=type(e).__name__,
        )
        return False
    raw["metadata"] = updated["metadata"]
    raw["status"] = new
    return True
