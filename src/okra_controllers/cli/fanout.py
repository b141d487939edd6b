"""`okra promote | pause | resume | abort | retry SYSTEM [--application NAME]`: a system
Cell is operated as one thing.

A system's applications roll out through their own Cells (labelled with the system's
name), so each command does to every application Cell (or, with `--application`, to one)
what it does to a single Cell: the same writes, the same refusals, the same rights (a
patch of the application's Cell). Two act on the system Cell itself as well, because its
plan reads them: `okra pause SYSTEM` annotates the system (its plan then holds every
application before its next step, and keeps holding them whatever the application Cells
say), and `okra promote | resume SYSTEM` remove that annotation first.

An application with nothing to do (no rollout in progress, nothing aborted) is named and
skipped; the command fails only when none of them had anything to do.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from okra_controllers.api.kinds import CELL
from okra_controllers.cell.observe import PAUSED
from okra_controllers.cell.system.names import APP_LABEL, SYSTEM_LABEL
from okra_controllers.cli import commands
from okra_controllers.cli.kube import CliError, Context
from okra_controllers.cli.system import is_system
from okra_controllers.cli.view import get_cell

Obj = dict[str, Any]
Handler = Callable[[Context, argparse.Namespace], Awaitable[int]]


@dataclass(frozen=True)
class Target:
    application: str
    cell: str


def targets(system: Obj, children: list[Obj], application: str | None) -> list[Target]:
    """The application Cells a command acts on, in the order of `spec.applications`;
    CliError for an application the system does not have, or has no Cell for yet."""
    name = system["metadata"]["name"]
    apps = [str(a.get("name")) for a in (system.get("spec") or {}).get("applications") or []]
    if application is not None and application not in apps:
        raise CliError(
            f"--application {application}: system {name} has no such application "
            f"(it has: {', '.join(apps) or 'none'})"
        )
    cells = {
        str((c["metadata"].get("labels") or {}).get(APP_LABEL)): str(c["metadata"]["name"])
        for c in children
        if (c["metadata"].get("labels") or {}).get(SYSTEM_LABEL) == name
    }
    wanted = [application] if application is not None else apps
    out = [Target(a, cells[a]) for a in wanted if a in cells]
    if not out:
        which = f"application {application}" if application is not None else "any application"
        raise CliError(
            f"system {name} has no Cell for {which} yet (it makes them once its clusters "
            f"are ready: okra get cell {name})"
        )
    return out


async def _children(ctx: Context, system: Obj, application: str | None) -> list[Target]:
    name = system["metadata"]["name"]
    listed = await ctx.client.list(CELL, ctx.namespace, label_selector=f"{SYSTEM_LABEL}={name}")
    return targets(system, listed.items, application)


ROLLED_BACK = ("CheckFailed", "Reverting", "FailedReverting", "Reverted")
"""Application phases in which the system itself aborts the application's Cell."""


def refusal(system: Obj, verb: str, t: Target, held: bool) -> str | None:
    """Why `verb` on the application's Cell would be undone by the system's next apply
    (what the system decides wins): None when it would not."""
    name = system["metadata"]["name"]
    apps = (system.get("status") or {}).get("applications") or []
    phase = next((a.get("phase") for a in apps if a.get("name") == t.application), None)
    if verb == "retry" and phase in ROLLED_BACK:
        return (
            f"system {name} rolls application {t.application} back after a failed check "
            f"(phase {phase}) and keeps its Cell aborted for this cluster set; a change of "
            "spec.clusters moves it again"
        )
    if verb in ("resume", "promote") and held:
        return f"system {name} is paused and holds every application: okra resume {name}"
    return None


async def _each(
    ctx: Context,
    args: argparse.Namespace,
    single: Handler,
    found: list[Target],
    why_not: Callable[[Target], str | None],
) -> tuple[int, list[str]]:
    """`single` on each application Cell: how many acted, and why the others did not."""
    acted, skipped = 0, []
    for t in found:
        try:
            if (reason := why_not(t)) is not None:
                raise CliError(reason)
            await single(ctx, argparse.Namespace(**{**vars(args), "cell": t.cell}))
            acted += 1
        except CliError as e:
            ctx.say(f"application {t.application} (cell {t.cell}): skipped: {e}")
            skipped.append(f"{t.application}: {e}")
    return acted, skipped


def systemwise(single: Handler, verb: str) -> Handler:
    """`single` for a Cell; for a system, `single` on its application Cells."""

    async def handler(ctx: Context, args: argparse.Namespace) -> int:
        cell = await get_cell(ctx.client, args.cell, ctx.namespace)
        application = getattr(args, "application", None)
        if not is_system(cell):
            if application is not None:
                raise CliError(
                    f"--application {application}: cell {args.cell} is not a system "
                    "(it has no spec.applications)"
                )
            return await single(ctx, args)
        name = cell["metadata"]["name"]
        held = commands.paused(cell) is not None
        if verb == "pause" and application is None:
            return await _pause_system(ctx, name, held)
        resumed = False
        if verb in ("promote", "resume") and application is None and held:
            await commands.annotate(ctx, name, PAUSED, None, "resume")
            ctx.say(f"system {name}: resumed (removed {PAUSED}); its applications move on")
            resumed = True
        found = await _children(ctx, cell, application)
        still_held = held and not resumed
        acted, skipped = await _each(
            ctx, args, single, found, lambda t: refusal(cell, verb, t, still_held)
        )
        if acted or resumed:
            return 0
        raise CliError(f"system {name}: nothing to {verb}: " + "; ".join(skipped))

    return handler


async def _pause_system(ctx: Context, name: str, held: bool) -> int:
    if held:
        ctx.say(f"system {name}: already paused (okra resume {name} resumes)")
        return 0
    await commands.annotate(ctx, name, PAUSED, "true", "pause")
    ctx.say(
        f"system {name}: paused; every application holds at its current weights before its "
        f"next step until okra resume {name} (or okra promote {name}) [{PAUSED}=true]"
    )
    return 0


async def resume_cell(ctx: Context, args: argparse.Namespace) -> int:
    """`okra resume CELL`: remove `okra pause`'s annotation (and nothing else)."""
    cell = await get_cell(ctx.client, args.cell, ctx.namespace)
    if commands.paused(cell) is None:
        raise CliError(f"cell {args.cell} is not paused")
    await commands.resume(ctx, args.cell)
    return 0


cmd_promote = systemwise(commands.cmd_promote, "promote")
cmd_pause = systemwise(commands.cmd_pause, "pause")
cmd_resume = systemwise(resume_cell, "resume")
cmd_abort = systemwise(commands.cmd_abort, "abort")
cmd_retry = systemwise(commands.cmd_retry, "retry")
