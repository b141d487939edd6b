"""What the load balancer config controllers (ALB listener rule, NLB listener default
action) share: reading a spec into its model with problems that name the field, the
`Synced` condition and the status patch written only when something changed, target
group names for messages, and AWS errors said in one line.

Why one module: both controllers promise the Cell the same contract (`status.applied`
is what AWS shows, `Synced` says whether it equals the spec, an idle resync writes
nothing), so the code that keeps that promise exists once.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ValidationError

from okra_controllers.api.v1alpha1.cell import LoadBalancerConfigStatus
from okra_controllers.api.v1alpha1.common import with_condition
from okra_controllers.api.validation import problems
from okra_controllers.aws import elbv2
from okra_controllers.aws.errors import hint
from okra_runtime.client import Client
from okra_runtime.errors import NotFoundError
from okra_runtime.gvk import GVK

SYNCED = "Synced"
READ_REFRESH = 300.0
"""Seconds after which an idle look at AWS writes `lastReadTime` although nothing else
changed: a reading is never reported older than this plus the look period while the
manager runs, and idle configs cost one status write per config per this period."""

Json = dict[str, Any]
M = TypeVar("M", bound=BaseModel)
S = TypeVar("S", bound=LoadBalancerConfigStatus)


def parse_spec(
    model: type[M], raw: Mapping[str, Any], validate: Callable[[M], list[str]]
) -> tuple[M | None, list[str]]:
    """The object parsed into `model` (status ignored), or the problems with it, each
    naming the field (`spec.forwardTargetGroups[1].weight: ...`); `validate` adds the
    rules the schema cannot say."""
    try:
        obj = model.model_validate({k: v for k, v in raw.items() if k != "status"})
    except ValidationError as e:
        return None, problems(e)
    return obj, validate(obj)


def status_of(model: type[S], raw: Mapping[str, Any]) -> S:
    """The object's status; an unreadable one (hand-edited) counts as empty."""
    try:
        return model.model_validate(raw.get("status") or {})
    except ValidationError:
        return model()


def with_synced(
    status: S,
    *,
    synced: bool,
    reason: str,
    message: str,
    generation: int | None,
    now: datetime.datetime,
    wrote: bool,
) -> S:
    """A copy of `status` with `observedGeneration`, `lastAppliedTime` (when this sync
    wrote to AWS) and the `Synced` condition, whose transition time moves only when its
    status does."""
    new = status.model_copy(deep=True)
    new.observed_generation = generation
    if wrote:
        new.last_applied_time = now
    new.conditions = with_condition(
        status.conditions, SYNCED, synced, reason, message[:32768], now, generation
    )
    return new


def with_read_time(
    old: S, new: S, read_at: datetime.datetime | None, refresh: float = READ_REFRESH
) -> S:
    """`new` with `lastReadTime` = `read_at` (when AWS was read for it; None: this sync
    could not read, and `applied` is the earlier reading) if anything else in the status
    changed, none was recorded, or the recorded one is `refresh` seconds old; else the
    recorded one, so that an idle look writes nothing."""
    if read_at is None:
        return new
    previous = old.last_read_time
    same = dump_status(old.model_copy(update={"last_read_time": None})) == dump_status(
        new.model_copy(update={"last_read_time": None})
    )
    if same and previous is not None and (read_at - previous).total_seconds() < refresh:
        new.last_read_time = previous
    else:
        new.last_read_time = read_at
    return new


def dump_status(status: BaseModel) -> Json:
    out: Json = status.model_dump(by_alias=True, exclude_none=True, mode="json")
    return out


async def patch_status(
    client: Client,
    gvk: GVK,
    raw: Mapping[str, Any],
    old: Json,
    new: Json,
) -> bool:
    """Patch the status subresource from `old` to `new` (keys gone from `new` are
    removed); nothing when they are equal, so an idle resync writes nothing. False when
    nothing was written."""
    if new == old:
        return False
    patch = {"status": {k: new.get(k) for k in {*old, *new}}}
    with suppress(NotFoundError):  # deleted meanwhile: nothing to report on
        await client.patch(
            gvk,
            raw["metadata"]["name"],
            patch,
            namespace=raw["metadata"].get("namespace"),
            subresource="status",
        )
    return True


def in_spec_order(
    values: Sequence[Any], spec_values: Sequence[Any], key: Callable[[Any], Any]
) -> list[Any]:
    """AWS's values, those the spec lists first and in its order, so that `applied`
    reads like the spec when they agree."""
    rank = {key(v): i for i, v in reversed(list(enumerate(spec_values)))}
    return sorted(values, key=lambda v: (rank.get(key(v), len(rank)), str(key(v))))


def tg_name(arn: str) -> str:
    """`...:targetgroup/NAME/ID` -> NAME, for target groups the spec does not name."""
    parts = arn.split(":targetgroup/", 1)
    return parts[1].split("/", 1)[0] if len(parts) == 2 else arn


def weights_note(actions: Sequence[Json] | None) -> str:
    """`: name=70, other=30` for the first weighted forward in `actions` (Event text)."""
    for action in actions or ():
        pairs = elbv2.forward_weights(action)
        if pairs:
            return ": " + ", ".join(f"{tg_name(arn)}={w}" for arn, w in pairs)
    return ""


def error_code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


def role_refusal(e: BaseException, role_arn: str | None) -> str | None:
    """When `e` is STS refusing to let okra assume `role_arn` (a backend's `roleARN`), the
    status message that says so, without the role's ARN (AWS's own message names it, and
    status messages reach the logs; a role is never logged); else None."""
    if not role_arn or not isinstance(e, ClientError) or e.operation_name != "AssumeRole":
        return None
    said = aws_message(e).replace(role_arn, "<spec.roleARN>")
    return (
        "cannot assume the role in spec.roleARN (its trust policy must name okra's "
        f"principal, and okra's policy allow sts:AssumeRole on it): {said}"
    )


def aws_message(e: ClientError | BotoCoreError) -> str:
    """`Operation: Code: Message; what to fix`, the one line a status condition and an
    Event carry."""
    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        said = f"{e.operation_name}: {err.get('Code', 'Error')}: {err.get('Message', str(e))}"
        return f"{said}; {hint(e)}" if hint(e) else said
    return str(e)
