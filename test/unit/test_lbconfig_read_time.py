"""`lastReadTime` says when okra read from AWS what a load balancer config's status says:
written with any other change, refreshed by an idle look only once it is `READ_REFRESH`
old (so an idle look writes nothing in between), kept when AWS could not be read."""

from __future__ import annotations

import datetime

from okra_controllers.api.v1alpha1.cell import AWSApplicationLoadBalancerConfigStatus
from okra_controllers.lbconfig import READ_REFRESH, with_read_time, with_synced

T0 = datetime.datetime(2025, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def synced(
    old: AWSApplicationLoadBalancerConfigStatus, now: datetime.datetime, ok: bool = True
) -> AWSApplicationLoadBalancerConfigStatus:
    return with_synced(
        old,
        synced=ok,
        reason="Synced" if ok else "NotApplied",
        message="m",
        generation=1,
        now=now,
        wrote=False,
    )


def test_the_first_reading_is_recorded() -> None:
    old = AWSApplicationLoadBalancerConfigStatus()
    new = with_read_time(old, synced(old, at(0)), at(0))
    assert new.last_read_time == at(0)


def test_an_idle_look_keeps_the_recorded_reading_until_it_is_old() -> None:
    first = with_read_time(
        AWSApplicationLoadBalancerConfigStatus(),
        synced(AWSApplicationLoadBalancerConfigStatus(), at(0)),
        at(0),
    )
    idle = with_read_time(first, synced(first, at(60)), at(60))
    assert idle == first  # nothing to write
    refreshed = with_read_time(first, synced(first, at(READ_REFRESH)), at(READ_REFRESH))
    assert refreshed.last_read_time == at(READ_REFRESH)


def test_a_change_is_written_with_its_reading() -> None:
    first = with_read_time(
        AWSApplicationLoadBalancerConfigStatus(),
        synced(AWSApplicationLoadBalancerConfigStatus(), at(0)),
        at(0),
    )
    drifted = with_read_time(first, synced(first, at(53), ok=False), at(53))
    assert drifted.last_read_time == at(53)


def test_no_reading_keeps_the_one_recorded() -> None:
    first = with_read_time(
        AWSApplicationLoadBalancerConfigStatus(),
        synced(AWSApplicationLoadBalancerConfigStatus(), at(0)),
        at(0),
    )
    failed = with_read_time(first, synced(first, at(90), ok=False), None)
    assert failed.last_read_time == at(0)
