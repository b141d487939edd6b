"""`okra status CELL [--timeout D] [--no-watch]`: wait for a Cell's rollout to finish,
for pipelines (`okra status web --timeout 30m && deploy-next`).

A line is printed each time the Cell's phase, health or message changes. The Cell is
finished when the controller has seen its current spec (`observedGeneration`
equals `generation`) and its health is Healthy (exit 0) or Degraded (exit 1;
Argo Rollouts' `status` exits the same way). Paused and Progressing keep
waiting: a pause ends by itself or by `okra promote`. Exit 3 when `--timeout`
passes first, or, with `--no-watch`, when the Cell is not finished yet.

A system Cell is finished when the system is: every application Completed
(Healthy), or one failed (Degraded). Under its own line, each application's phase and
message is printed when it changes, so a pipeline's log shows which one moved or failed.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.kinds import CELL
from okra_controllers.cli.kube import CliError, Context, watching
from okra_controllers.cli.view import get_cell

HEALTHY, DEGRADED, NOT_DONE = 0, 1, 3


def verdict(cell: dict[str, Any]) -> int | None:
    """The exit code for a finished Cell; None while it is not finished."""
    st = cell.get("status") or {}
    generation = (cell.get("metadata") or {}).get("generation")
    if generation is not None and st.get("observedGeneration") != generation:
        return None  # the controller has not acted on the latest spec yet
    health = st.get("health")
    if health == "Healthy":
        return HEALTHY
    if health == "Degraded":
        return DEGRADED
    return None


def line(cell: dict[str, Any]) -> str:
    st = cell.get("status") or {}
    phase = st.get("phase") or "Pending"
    if st.get("health"):
        phase = f"{phase} ({st['health']})"
    message = st.get("message") or ""
    generation = (cell.get("metadata") or {}).get("generation")
    if generation is not None and st.get("observedGeneration") not in (None, generation):
        message = (message + "; " if message else "") + "waiting for the controller"
    return f"{phase} - {message}" if message else phase


async def cmd_status(ctx: Context, args: argparse.Namespace) -> int:
    timeout: float | None = None
    if args.timeout:
        try:
            timeout = parse_duration(args.timeout)
        except ValueError as e:
            raise CliError(f"--timeout: {e}") from None
    cell = await get_cell(ctx.client, args.cell, ctx.namespace)
    if args.no_watch:
        ctx.say(line(cell))
        for said in application_lines(cell).values():
            ctx.say(said)
        code = verdict(cell)
        return NOT_DONE if code is None else code
    try:
        return await asyncio.wait_for(_wait(ctx, args.cell), timeout)
    except TimeoutError:
        ctx.err.write(f"error: cell {args.cell}: not finished after {args.timeout}\n")
        return NOT_DONE


def application_lines(cell: dict[str, Any]) -> dict[str, str]:
    """A system Cell's applications: name -> `application NAME: PHASE - message`."""
    out = {}
    for a in (cell.get("status") or {}).get("applications") or []:
        name, phase = str(a.get("name")), a.get("phase") or "Pending"
        text = f"  application {name}: {phase}"
        out[name] = f"{text} - {a['message']}" if a.get("message") else text
    return out


async def _wait(ctx: Context, name: str) -> int:
    last = ""
    apps: dict[str, str] = {}
    async with watching(ctx, CELL, name) as changes:
        async for cell in changes:
            text = line(cell)
            now = application_lines(cell)
            if text != last:
                ctx.say(text)
                last = text
            for app, said in now.items():
                if apps.get(app) != said:
                    ctx.say(said)
            apps = now
            code = verdict(cell)
            if code is not None:
                return code
    return 130  # interrupted
