"""Cell commands: get cell(s) and target groups, status, plan, promote, pause, abort,
retry, set version."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from okra_controllers.cli.parser import (
    Verbs,
    all_namespaces,
    application,
    output,
    shown_by_name,
    watch,
)

if TYPE_CHECKING:
    from okra_controllers.cli.parser import Subparsers

H = "okra_controllers.cli"


def _on_cell(
    v: Verbs, group: Subparsers, name: str, help_: str, handler: str, *, epilog: str | None = None
) -> argparse.ArgumentParser:
    """A command on one Cell: CELL, its first argument."""
    p = v.command(group, name, help_, handler, epilog=epilog)
    p.add_argument("cell", metavar="CELL")
    return p


def register(v: Verbs) -> None:
    _views(v)
    _status_and_plan(v)
    _moves(v)
    _history(v)


def _history(v: Verbs) -> None:
    """okra history cell NAME [ROLLOUT]."""
    p = v.command(
        v.history,
        "cell",
        "a Cell's past rollouts (status.history): a table; with ROLLOUT, its timeline",
        f"{H}.history:cmd_history_cell",
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("rollout", metavar="ROLLOUT", nargs="?", help="a rollout ID (a prefix will do)")
    output(p, choices=("json", "yaml"))


def _views(v: Verbs) -> None:
    """okra get cell, cells, targetgroups."""
    p = v.command(
        v.get,
        "cell",
        "a Cell's rollout: versions, weights, steps, analyses, blocklist",
        f"{H}.get:cmd_get_cell",
    )
    shown_by_name(p)

    p = v.command(
        v.get,
        "cells",
        "Cells: phase, versions, weight, step",
        f"{H}.get:cmd_get_cells",
        aliases=("cl",),
    )
    all_namespaces(p)
    watch(p)
    output(p)

    p = v.command(
        v.get,
        "targetgroups",
        "AWSTargetGroups with their versions and weights",
        f"{H}.get:cmd_get_target_groups",
        aliases=("targetgroup", "tg", "tgs"),
    )
    p.add_argument("--cell", metavar="NAME", help="only the target groups this Cell selects")
    all_namespaces(p)
    output(p)


def _status_and_plan(v: Verbs) -> None:
    """okra status (wait for the rollout) and okra plan (what okra would do now)."""
    p = _on_cell(
        v,
        v.top,
        "status",
        "wait for a Cell's rollout (a system: every application) to finish: exit 0 when "
        "Healthy, 1 when Degraded, 3 when --timeout passes first",
        f"{H}.status:cmd_status",
        epilog="exit codes: 0 Healthy, 1 Degraded (or an error), 2 usage, 3 timed out / "
        "not finished (--no-watch)",
    )
    p.add_argument(
        "--timeout",
        metavar="DURATION",
        help="give up after this long (30s, 10m, 1h; default: wait forever)",
    )
    p.add_argument("--no-watch", action="store_true", help="print the phase once and exit by it")

    p = v.command(
        v.top,
        "plan",
        "what okra would do for a Cell now: desired version, each step's weights per "
        "target group, pauses, analyses, blockers (reads only, writes nothing)",
        f"{H}.plan:cmd_plan",
    )
    p.add_argument("cell", metavar="CELL|FILE", help="a Cell's name, or a file with a Cell")
    p.add_argument(
        "--aws-endpoint-url",
        metavar="URL",
        help="AWS endpoint (LocalStack, moto); default: $AWS_ENDPOINT_URL or AWS",
    )
    p.add_argument("--region", help="AWS region (default: $AWS_REGION / $AWS_DEFAULT_REGION)")
    p.add_argument("--no-aws", action="store_true", help="do not read AWS (no health, no rule)")
    output(p, choices=("json", "yaml"))


def _moves(v: Verbs) -> None:
    """The commands that move a rollout: promote, pause, abort, retry, set version."""
    p = _on_cell(
        v,
        v.top,
        "promote",
        "end the current pause (or accept an inconclusive analysis) of a Cell's rollout; "
        "resume a Cell held by okra pause (a system: each application's Cell)",
        f"{H}.progressive:cmd_promote_any",
    )
    p.add_argument("--full", action="store_true", help="skip every remaining step: canary to 100%%")
    application(p)

    for name, help_, handler in (
        (
            "pause",
            "hold a Cell's rollout (a system: every application) at its current weights until "
            "okra resume or okra promote",
            "cmd_pause_any",
        ),
        (
            "abort",
            "send all traffic back to the stable version and hold (a system: each application)",
            "cmd_abort_any",
        ),
    ):
        application(_on_cell(v, v.top, name, help_, f"{H}.progressive:{handler}"))

    p = _on_cell(
        v,
        v.top,
        "retry",
        "resume after abort or failure: remove the abort, unblock VERSION "
        "(default: every blocked version newer than the stable one)",
        f"{H}.fanout:cmd_retry",
    )
    p.add_argument("version", metavar="VERSION", nargs="?")
    application(p)

    p = _on_cell(
        v,
        v.set,
        "version",
        "pin (or, lower, roll back to) a version: spec.version",
        f"{H}.commands:cmd_set_version",
    )
    p.add_argument("version", metavar="VERSION", nargs="?")
    p.add_argument("--clear", action="store_true", help="remove spec.version: newest wins again")
