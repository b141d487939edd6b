"""Reading an object into its model: pydantic's errors as text that names the field, and the
one way a controller loads an object or reports its invalid spec.

An invalid spec is bad input, not a failure to retry: the controller says what to fix (a
Warning Event naming the field) and waits; an edit of the spec (a new generation) brings the
object back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from okra_runtime.cache import Store
from okra_runtime.events import EventRecorder
from okra_runtime.reconcile import Request

M = TypeVar("M", bound=BaseModel)


def field_path(loc: Sequence[int | str]) -> str:
    """pydantic's error location as a YAML path: `spec.forwardTargetGroups[0].weight`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def problem(err: ErrorDetails) -> str:
    """One pydantic error as `field.path: message` (the message alone when it has no field)."""
    where = field_path(err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


def first_problem(e: ValidationError) -> str:
    """The first of the error's problems, naming its field."""
    return problem(e.errors()[0])


def problems(e: ValidationError) -> list[str]:
    """Every problem of the error, each naming its field."""
    return [problem(err) for err in e.errors()]


def validated(model: type[M], raw: Mapping[str, Any]) -> tuple[M, None] | tuple[None, str]:
    """`raw` read into `model`, or None and the first problem, naming its field."""
    try:
        return model.model_validate(raw), None
    except ValidationError as e:
        return None, first_problem(e)


def load_or_report(
    store: Store,
    req: Request,
    model: type[M],
    events: EventRecorder | None,
    *,
    reason: str = "InvalidSpec",
) -> tuple[dict[str, Any], M] | None:
    """The requested object from the informer's store and read into `model`; None when it is
    gone, or when it cannot be read: then a Warning Event `reason` names the field."""
    raw = store.get(req.name, req.namespace)
    if raw is None:
        return None
    obj, why = validated(model, raw)
    if obj is None:
        if events is not None:
            events.event(raw, "Warning", reason, why or "")
        return None
    return raw, obj


__all__ = [
    "field_path",
    "first_problem",
    "load_or_report",
    "problem",
    "problems",
    "validated",
]
