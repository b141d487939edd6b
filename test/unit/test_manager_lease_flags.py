"""okra-manager's leader-election timing flags (controller-runtime's LeaseDuration,
RenewDeadline, RetryPeriod): their defaults, the environment, and the order the elector
needs (lease > renew deadline > retry period > 0) refused at start with the three values."""

from __future__ import annotations

import argparse

import pytest

from okra_controllers.manager import parse_args


def lease(a: argparse.Namespace) -> tuple[float, float, float]:
    return a.leader_elect_lease_duration, a.leader_elect_renew_deadline, a.leader_elect_retry_period


def test_defaults_are_controller_runtimes() -> None:
    assert lease(parse_args([])) == (15.0, 10.0, 2.0)


def test_flags_and_environment_set_them(monkeypatch: pytest.MonkeyPatch) -> None:
    args = [
        "--leader-elect-lease-duration=8",
        "--leader-elect-renew-deadline=5",
        "--leader-elect-retry-period=0.5",
    ]
    assert lease(parse_args(args)) == (8.0, 5.0, 0.5)
    monkeypatch.setenv("OKRA_LEADER_ELECT_LEASE_DURATION", "30")
    monkeypatch.setenv("OKRA_LEADER_ELECT_RENEW_DEADLINE", "20")
    assert lease(parse_args([])) == (30.0, 20.0, 2.0)


@pytest.mark.parametrize(
    "args",
    [
        ["--leader-elect-lease-duration=10"],  # not above the renew deadline (10)
        ["--leader-elect-renew-deadline=1"],  # below the retry period (2)
        ["--leader-elect-retry-period=0"],
        ["--leader-elect-lease-duration=5", "--leader-elect-renew-deadline=8"],
    ],
)
def test_an_impossible_order_is_refused_naming_the_flags(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(args)
    err = capsys.readouterr().err
    assert "--leader-elect-lease-duration > --leader-elect-renew-deadline" in err
    assert "--leader-elect-retry-period > 0" in err
