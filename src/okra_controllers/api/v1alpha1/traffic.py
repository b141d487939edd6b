"""Traffic confirmation: a Cell's weight step is done when the traffic says so too.

`spec.trafficConfirmation` (opt-in): after AWS shows a step's weights, okra reads how
many requests each target group served over `window` (CloudWatch, `RequestCount` per
target group and load balancer) and compares each version's observed share with its
planned share. Within `tolerance` percentage points, once at least `minRequests` were
seen, the step proceeds; fewer requests than that is "not enough traffic to confirm",
never a pass; a share off by more holds the step and, once `deadline` has passed since
AWS showed the weights, fails it as the Cell's `failurePolicy` says. docs/traffic.md
says which metrics apply to which load balancer.
"""

from __future__ import annotations

import datetime
from typing import Literal

from pydantic import Field

from okra_controllers.api.v1alpha1.common import ApiModel

_DURATION = r"^([0-9]*[1-9][0-9]*(\.[0-9]+)?(ms|s|m|h))+$"
"""A Go duration of whole numbers of a unit or more (`90s`, `2m`, `1h30m`): never zero."""


class TrafficConfirmation(ApiModel):
    """What a step's observed traffic must show before the step is done."""

    window: str = Field(default="2m", pattern=_DURATION, max_length=32)
    """How long a reading is: the requests each target group served over the last
    `window`, the first reading over the `window` after AWS showed the weights. ALBs
    publish to CloudWatch once a minute, so a window of 2m or more."""
    tolerance: int = Field(default=5, ge=0, le=100)
    """How far (percentage points) a version's observed share may be from its planned
    share: 20 planned, tolerance 5: 15 to 25 observed confirms it."""
    min_requests: int = Field(default=100, ge=1)
    """Requests a reading needs (all target groups together) before it can confirm; fewer
    is "not enough traffic to confirm": the step waits, it never passes."""
    deadline: str = Field(default="10m", pattern=_DURATION, max_length=32)
    """How long after AWS showed the weights a share off the plan may last before the step
    fails (by `failurePolicy`; unset: all traffic back to stable and the version blocked,
    as a failed analysis does). Too little traffic never fails the step by itself; a
    `progressDeadlineSeconds` does. A deadline shorter than `window` counts as `window`
    (the first reading decides)."""


TrafficVerdict = Literal[
    "Waiting", "Unavailable", "NotEnoughTraffic", "Confirmed", "Diverged", "Failed"
]


class VersionTraffic(ApiModel):
    """One version's share of a reading: planned (as AWS shows it) and observed."""

    version: str
    planned: int
    """Percent of the weight AWS shows for the version."""
    observed: float | None = None
    """Percent of the reading's requests the version's target groups served (one
    decimal); unset until a reading has at least one request."""
    requests: int = 0


class TrafficStatus(ApiModel):
    """The traffic the current weight step has been confirmed by, or waits for."""

    step: str
    """`<rolloutID>/<step index>`: the step whose weights this reading is of."""
    since: datetime.datetime
    """When okra first saw AWS show the step's weights; readings start no earlier."""
    verdict: TrafficVerdict
    message: str = ""
    window_start: datetime.datetime | None = None
    window_end: datetime.datetime | None = None
    requests: int = 0
    versions: list[VersionTraffic] = Field(default_factory=list)
