"""`okra promote`, `pause`, `abort`, `retry` and `set version`: small writes (merge
patches) the Cell controller acts on. What to write is decided in `actions`."""

from __future__ import annotations

import argparse
from typing import Any

from okra_controllers.api.kinds import BLOCKLIST, CELL, PAUSE, TARGET_GROUP
from okra_controllers.api.v1alpha1.cell import Cell
from okra_controllers.cell.versions import parse_version
from okra_controllers.cli.actions import (
    ABORT,
    PAUSED,
    PROMOTE,
    already_aborted,
    annotation_patch,
    nothing_to_retry,
    plan_promote,
    plan_retry,
    rollout,
    version_patch,
)
from okra_controllers.cli.kube import CliError, Context, get_or_none
from okra_controllers.cli.view import cell_selector, get_cell, selects
from okra_runtime.errors import ConflictError, NotFoundError

RETRIES = 5


def paused(cell: dict[str, Any]) -> str | None:
    """The Cell's `okra pause` annotation (None: it is not paused)."""
    annotations: dict[str, str] = cell["metadata"].get("annotations") or {}
    return annotations.get(PAUSED)


async def annotate(ctx: Context, name: str, key: str, value: str | None, action: str) -> None:
    """Set annotation `key` of the Cell `name` (None: remove it), a merge patch, with the
    user doing `action` beside it (the actor annotations) in the same write."""
    patch = annotation_patch(key, value)
    patch["metadata"]["annotations"].update(await ctx.acting(action, value))
    await ctx.client.patch(CELL, name, patch, namespace=ctx.namespace)


async def resume(ctx: Context, name: str) -> None:
    """Remove `okra pause`'s annotation from the Cell `name`, and say so."""
    await annotate(ctx, name, PAUSED, None, "resume")
    ctx.say(f"cell {name}: resumed (removed {PAUSED})")


async def named_cell(ctx: Context, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The Cell the command names (`args.cell`, in the context's namespace): its name, and
    the Cell as the API server holds it."""
    return args.cell, await get_cell(ctx.client, args.cell, ctx.namespace)


async def cmd_promote(ctx: Context, args: argparse.Namespace) -> int:
    name, cell = await named_cell(ctx, args)
    if paused(cell) is not None:
        await resume(ctx, name)
        if not args.full:
            return 0
    p = plan_promote(cell, full=args.full)
    r = rollout(cell)
    # The annotation first: the step then ends with it in place, so the Cell's record says
    # who promoted, whichever the Cell controller sees first.
    await annotate(ctx, name, PROMOTE, p.annotation, "promote")
    if p.pause is not None:
        try:
            await ctx.client.patch(
                PAUSE, p.pause, {"spec": {"cancelled": True}}, namespace=ctx.namespace
            )
            ctx.say(f"pause {p.pause}: cancelled")
        except NotFoundError:
            pass  # not created yet, or gone with its step: the annotation alone ends it
    ctx.say(
        f"cell {name}: {p.summary} of rollout {r.rollout_id} ({r.stable} → {r.canary}) "
        f"[{PROMOTE}={p.annotation}]"
    )
    return 0


async def cmd_pause(ctx: Context, args: argparse.Namespace) -> int:
    name, cell = await named_cell(ctx, args)
    if paused(cell) == "true":
        ctx.say(f"cell {name}: already paused (okra promote {name} resumes)")
        return 0
    await annotate(ctx, name, PAUSED, "true", "pause")
    st = cell.get("status") or {}
    if st.get("canaryVersion"):
        where = (
            f"the rollout of {st['canaryVersion']} holds at {st.get('canaryWeight') or 0}% "
            "before its next step"
        )
    else:
        where = "no rollout is in progress; the next one holds before its first step"
    ctx.say(f"cell {name}: paused; {where} until okra promote {name} [{PAUSED}=true]")
    return 0


async def cmd_abort(ctx: Context, args: argparse.Namespace) -> int:
    name, cell = await named_cell(ctx, args)
    r = rollout(cell)
    if r.aborted:
        ctx.say(f"cell {name}: {already_aborted(r)}")
        return 0
    await annotate(ctx, name, ABORT, r.rollout_id, "abort")
    ctx.say(
        f"cell {name}: aborting rollout {r.rollout_id} of {r.canary}; all traffic goes back to "
        f"{r.stable} and stays there until okra retry {name} [{ABORT}={r.rollout_id}]"
    )
    return 0


async def cmd_retry(ctx: Context, args: argparse.Namespace) -> int:
    name, cell = await named_cell(ctx, args)
    blocklist = await get_or_none(ctx.client, BLOCKLIST, name, ctx.namespace)
    plan = plan_retry(cell, blocklist, args.version)
    if plan.nothing:
        ctx.say(f"cell {name}: {nothing_to_retry(cell)}")
        return 0
    if plan.abort is not None:
        await ctx.client.patch(
            CELL,
            name,
            {"metadata": {"annotations": {ABORT: None, **await ctx.acting("retry", plan.abort)}}},
            namespace=ctx.namespace,
        )
        ctx.say(f"cell {name}: removed {ABORT}={plan.abort}; the rollout starts over")
    if plan.unblock:
        removed = await _unblock(ctx, name, args.version, cell, blocklist)
        for item in removed:
            cause = f" (blocked for: {item.get('cause')})" if item.get("cause") else ""
            ctx.say(f"versionblocklist {name}: removed {item.get('version')}{cause}")
    return 0


async def _unblock(
    ctx: Context,
    name: str,
    version: str | None,
    cell: dict[str, Any],
    blocklist: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Remove the planned items, re-reading on conflict (the controller may append)."""
    for _ in range(RETRIES):
        if blocklist is None:
            return []
        plan = plan_retry(cell, blocklist, version)
        if not plan.unblock:
            return []
        blocklist["spec"] = {**(blocklist.get("spec") or {}), "items": plan.keep}
        try:
            await ctx.client.update(blocklist)
            return plan.unblock
        except ConflictError:
            blocklist = await get_or_none(ctx.client, BLOCKLIST, name, ctx.namespace)
    raise CliError(f"versionblocklist {name} kept changing; try again")


async def cmd_set_version(ctx: Context, args: argparse.Namespace) -> int:
    ns, name = ctx.namespace, args.cell
    if args.clear == (args.version is not None):
        raise CliError("give either a VERSION or --clear")
    patch = version_patch(None if args.clear else args.version)
    patch["metadata"] = {"annotations": await ctx.acting("version", patch["spec"]["version"])}
    cell = await get_cell(ctx.client, name, ns)
    before = (cell.get("spec") or {}).get("version")
    await ctx.client.patch(CELL, name, patch, namespace=ns)
    if args.clear:
        was = f" (was {before})" if before else " (it was not set)"
        ctx.say(f"cell {name}: spec.version cleared{was}; the newest eligible version is used")
        return 0
    was = f" (was {before})" if before else ""
    ctx.say(f"cell {name}: spec.version set to {args.version}{was}")
    await _warn_unusable(ctx, cell, args.version)
    return 0


async def _warn_unusable(ctx: Context, cell: dict[str, Any], version: str) -> None:
    """Say why the Cell will not switch, when it is clear from here."""
    wanted = parse_version(version)
    assert wanted is not None  # version_patch checked it
    ns, name = ctx.namespace, cell["metadata"]["name"]
    blocklist = await get_or_none(ctx.client, BLOCKLIST, name, ns)
    for item in ((blocklist or {}).get("spec") or {}).get("items") or []:
        v = parse_version(str(item.get("version")))
        if v is not None and v.parsed == wanted.parsed:
            ctx.warn(
                f"{version} is in VersionBlocklist {name} ({item.get('cause')}); "
                f"okra retry {name} {version} unblocks it"
            )
    selector = cell_selector(cell)
    labels = Cell.model_validate(cell).spec.labels_for_version()
    for tg in (await ctx.client.list(TARGET_GROUP, ns)).items:
        tg_labels = tg["metadata"].get("labels") or {}
        value = next((tg_labels[k] for k in labels if k in tg_labels), None)
        v = parse_version(value) if value else None
        if selects(selector, tg) and v is not None and v.parsed == wanted.parsed:
            return
    ctx.warn(f"no AWSTargetGroup of version {version} matches cell {name}'s selector yet")
