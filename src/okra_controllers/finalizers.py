"""Letting a deleted object go: okra's finalizer taken off with an update of the object.

The AWSTargetGroupBinding, ProgressiveRollout and config controllers (ALB listener rule)
each undo what they made when their object is deleted, then end the same way: the
finalizer off, the object written back, a conflict retried from a fresh read and an object
already gone left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from okra_runtime.client import Client
from okra_runtime.errors import ConflictError, NotFoundError
from okra_runtime.reconcile import Result


async def remove_finalizer(
    client: Client,
    raw: dict[str, Any],
    finalizer: str,
    *,
    on_removed: Callable[[], None] | None = None,
) -> Result | None:
    """Take `finalizer` off `raw` and update it: a requeue when the update conflicts (a newer
    version is read and finalized again), None once written or when the object is already
    gone. `on_removed` runs only after the update was written."""
    finalizers = raw["metadata"].get("finalizers") or []
    raw["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
    try:
        await client.update(raw)
    except ConflictError:
        return Result(requeue=True)
    except NotFoundError:
        return None
    if on_removed is not None:
        on_removed()
    return None
