"""The server-side watch timeout an informer asks for against its inactivity timeout:
the API server must close a healthy (even quiet) watch before the client would call it
stalled, so a `stalled` restart never comes from a quiet kind."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from okra_controllers.manager import parse_args
from okra_runtime.informer import InformerOptions, watch_timeout_seconds


@given(
    inactivity=st.floats(min_value=2.0, max_value=100_000.0),
    lo=st.integers(min_value=1, max_value=5000),
    span=st.integers(min_value=0, max_value=5000),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_watch_timeout_is_always_below_the_inactivity_timeout(
    inactivity: float, lo: int, span: int, seed: int
) -> None:
    o = InformerOptions(inactivity_timeout=inactivity, watch_timeout=(lo, lo + span))
    t = watch_timeout_seconds(o, random.Random(seed))
    assert isinstance(t, int)
    assert 1 <= t < inactivity
    assert t <= lo + span  # never longer than the configured range
    if inactivity >= 2.5:  # room for a whole second between the two
        assert t <= inactivity * 0.8


def test_defaults_and_a_short_test_timeout() -> None:
    rng = random.Random(1)
    seen = {watch_timeout_seconds(InformerOptions(), rng) for _ in range(2000)}
    print(f"\ninactivity 100 s (default): watch timeouts {min(seen)}..{max(seen)} s")
    assert (min(seen), max(seen)) == (50, 80)
    short = {watch_timeout_seconds(InformerOptions(inactivity_timeout=6), rng) for _ in range(200)}
    print(f"inactivity 6 s: watch timeouts {sorted(short)} s")
    assert short == {3, 4}
    # A long inactivity timeout leaves client-go's 5-10 minute rotation as it is.
    long = InformerOptions(inactivity_timeout=1000)
    seen = {watch_timeout_seconds(long, rng) for _ in range(5000)}
    print(f"inactivity 1000 s: watch timeouts {min(seen)}..{max(seen)} s")
    assert (min(seen), max(seen)) == (300, 600)


def test_the_manager_refuses_an_inactivity_timeout_below_two_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Below 2 s no whole-second watch timeout fits under it (a quiet watch would be taken
    for stalled): okra-manager says so at start instead."""
    assert parse_args(["--watch-inactivity-timeout", "6"]).watch_inactivity_timeout == 6.0
    assert parse_args([]).watch_inactivity_timeout == 100.0
    with pytest.raises(SystemExit):
        parse_args(["--watch-inactivity-timeout", "1.5"])
    err = capsys.readouterr().err
    print(f"\n{err.strip().splitlines()[-1]}")
    assert "--watch-inactivity-timeout must be at least 2" in err
