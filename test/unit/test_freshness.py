"""Read-your-writes floors (`okra_runtime.freshness`): what makes an object fresh again,
what a waiter sees, and what sets no floor at all."""

from __future__ import annotations

import asyncio

import pytest

from okra_runtime.freshness import Floors, revision
from support import FakeClock

pytestmark = pytest.mark.unit


def test_revision_reads_decimal_resource_versions_only() -> None:
    assert revision("123") == 123
    assert revision("0") == 0
    assert revision("") is None
    assert revision("12a") is None
    assert revision("-1") is None
    assert revision(None) is None
    assert revision(17) is None  # the API server's are strings; anything else is not one


def test_a_write_is_stale_until_the_cache_shows_its_version_or_a_later_one() -> None:
    f = Floors()
    assert f.fresh("ns/a")
    f.wrote("ns/a", "10")
    assert not f.fresh("ns/a")
    f.seen("ns/a", "9")  # the cache's older copy arrives: still stale
    assert not f.fresh("ns/a")
    f.seen("ns/b", "99")  # another object: nothing to do with a
    assert not f.fresh("ns/a")
    f.seen("ns/a", "10")
    assert f.fresh("ns/a")
    assert len(f) == 0

    f.wrote("ns/a", "20")
    f.seen("ns/a", "25")  # someone wrote after us: newer is as good
    assert f.fresh("ns/a")


def test_the_floor_is_the_highest_of_several_writes() -> None:
    f = Floors()
    f.wrote("ns/a", "10")
    f.wrote("ns/a", "12")
    f.wrote("ns/a", "11")  # an answer that arrived late does not lower it
    f.seen("ns/a", "11")
    assert not f.fresh("ns/a")
    f.seen("ns/a", "12")
    assert f.fresh("ns/a")


def test_a_deletion_or_a_version_that_is_not_a_number_releases() -> None:
    f = Floors()
    f.wrote("ns/a", "10")
    f.gone("ns/a")
    assert f.fresh("ns/a")
    f.wrote("ns/a", "10")
    f.seen("ns/a", "opaque")  # cannot be compared: never wait on it
    assert f.fresh("ns/a")
    f.wrote("ns/a", "opaque")  # sets no floor
    assert f.fresh("ns/a")
    f.gone("ns/never-written")  # harmless


def test_a_floor_lasts_at_most_its_ttl() -> None:
    clock = FakeClock()
    f = Floors(ttl=30.0, clock=clock)
    f.wrote("ns/a", "10")
    clock.now += 29.9
    assert not f.fresh("ns/a")
    clock.now += 0.1
    assert f.fresh("ns/a")
    assert len(f) == 0


async def test_a_waiter_wakes_when_the_cache_catches_up() -> None:
    f = Floors()
    f.wrote("ns/a", "10")
    waiter = asyncio.create_task(f.wait("ns/a", timeout=10))
    await asyncio.sleep(0)
    assert not waiter.done()
    f.seen("ns/a", "10")
    assert await asyncio.wait_for(waiter, 1) is True


async def test_a_waiter_gives_up_after_its_timeout_and_the_object_stays_stale() -> None:
    f = Floors()
    f.wrote("ns/a", "10")
    assert await f.wait("ns/a", timeout=0.01) is False
    assert not f.fresh("ns/a")
    assert await f.wait("ns/b", timeout=0) is True  # never written: fresh at once


async def test_several_waiters_all_wake_on_a_deletion() -> None:
    f = Floors()
    f.wrote("ns/a", "10")
    waiters = [asyncio.create_task(f.wait("ns/a", timeout=10)) for _ in range(3)]
    await asyncio.sleep(0)
    f.gone("ns/a")
    assert await asyncio.wait_for(asyncio.gather(*waiters), 1) == [True, True, True]
