"""`okra get progressiverollout NAME [--watch]`, `okra pause|resume NAME`, and `okra promote` /
`okra abort` for a ProgressiveRollout (they act on a Cell when NAME is one).

The commands only write what the controller reads: `spec.paused`, and annotations carrying a
fresh token each time (`okra.mumo.co/promote`, `/abort`, `/retry`) that the controller acts on
once and records in `status.handled`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.kinds import ANALYSIS_RUN, APPLICATION, CELL, PROGRESSIVE_ROLLOUT
from okra_controllers.cli import fanout
from okra_controllers.cli.actions import annotation_patch
from okra_controllers.cli.get import CLEAR, DEBOUNCE, SEPARATOR, dump
from okra_controllers.cli.kube import CliError, Context, get_or_none, on_interrupt, reading, synced
from okra_controllers.progressiverollout.controller import ABORT, PROMOTE, RETRY
from okra_runtime.errors import NoKindMatchError
from okra_runtime.informer import FuncHandler, Informer
from okra_runtime.timeutil import parse_time

Obj = dict[str, Any]
Handler = Callable[[Context, argparse.Namespace], Awaitable[int]]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _short(revision: Any) -> str:
    return str(revision or "-")[:12]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _condition_message(st: Obj, kind: str, status: str) -> str | None:
    """The message of the status's condition `kind` when it has `status` (None: it has not)."""
    for c in st.get("conditions") or []:
        if c.get("type") == kind and c.get("status") == status:
            return str(c.get("message"))
    return None


def render(pr: Obj, apps: dict[str, Obj], runs: dict[str, Obj], now: datetime.datetime) -> str:
    """Stages → clusters: phase, revision, sync/health, bake left, attempts, message."""
    meta, spec, st = pr["metadata"], pr.get("spec") or {}, pr.get("status") or {}
    lines = [
        f"Name:          {meta['name']}",
        f"Namespace:     {meta.get('namespace', '')}",
        f"ApplicationSet: {(spec.get('sourceRef') or {}).get('name', '')}",
        f"Phase:         {st.get('phase') or 'Pending'}"
        + ("  (paused)" if spec.get("paused") else "")
        + ("  (aborted)" if st.get("aborted") else ""),
        f"Revision:      {_short(st.get('revision'))}"
        + (f"  (failed: {_short(st.get('failedRevision'))})" if st.get("failedRevision") else ""),
        f"Policy:        {spec.get('failurePolicy', 'Pause')}, deadline "
        f"{spec.get('progressDeadlineSeconds', 600)}s",
        f"Message:       {st.get('message') or ''}",
    ]
    for kind, status in (("Stalled", "True"), ("AppProjects", "False")):
        said = _condition_message(st, kind, status)
        if said is not None:
            lines.append(f"{kind + ':':<15}{said}")
    specs = {s["name"]: s for s in spec.get("stages") or []}
    for i, ss in enumerate(st.get("stages") or []):
        stage = specs.get(ss["name"], {})
        head = f"\nStage {i + 1}: {ss['name']}  [{ss.get('phase', 'Pending')}]"
        if ss.get("analysisRun"):
            run = runs.get(ss["analysisRun"])
            phase = ((run or {}).get("status") or {}).get("phase") or ss.get("analysisPhase")
            head += f"  analysis {ss['analysisRun']}: {phase or 'Pending'}"
        lines.append(head)
        if ss.get("message"):
            lines.append(f"  {ss['message']}")
        rows = [
            [
                "CLUSTER",
                "APPLICATION",
                "PHASE",
                "REVISION",
                "SYNC",
                "HEALTH",
                "BAKE",
                "TRIES",
                "MESSAGE",
            ]
        ]
        for c in ss.get("clusters") or []:
            app = apps.get(c.get("application", ""), {})
            ast = app.get("status") or {}
            bake = "-"
            if c.get("phase") == "Baking" and stage.get("bakeTime") and c.get("healthySince"):
                since = parse_time(c["healthySince"])
                assert since is not None
                left = parse_duration(stage["bakeTime"]) - (now - since).total_seconds()
                bake = f"{max(0, int(left))}s"
            history = ast.get("history") or [{}]
            rows.append(
                [
                    c["name"],
                    c.get("application", ""),
                    c.get("phase", "Pending"),
                    _short(history[-1].get("revision")),
                    (ast.get("sync") or {}).get("status", "-"),
                    (ast.get("health") or {}).get("status", "-"),
                    bake,
                    str(c.get("attempts") or "-"),
                    c.get("message") or "",
                ]
            )
        if len(rows) > 1:
            lines.extend(f"  {r}" for r in _table(rows))
    if st.get("unmanagedClusters"):
        lines.append(f"\nIn no stage: {', '.join(st['unmanagedClusters'])}")
    return "\n".join(lines) + "\n"


async def _get(ctx: Context, name: str) -> Obj:
    pr = await get_or_none(ctx.client, PROGRESSIVE_ROLLOUT, name, ctx.namespace)
    if pr is None:
        raise CliError(f"progressiverollout {name} not found in namespace {ctx.namespace}")
    return pr


async def cmd_get_progressiverollout(ctx: Context, args: argparse.Namespace) -> int:
    if args.watch:
        return await _watch(ctx, args.name, args.output)
    pr = await _get(ctx, args.name)
    if args.output:
        ctx.out.write(dump(pr, args.output))
        return 0
    apps = {
        a["metadata"]["name"]: a for a in (await ctx.client.list(APPLICATION, ctx.namespace)).items
    }
    runs = {
        r["metadata"]["name"]: r for r in (await ctx.client.list(ANALYSIS_RUN, ctx.namespace)).items
    }
    ctx.out.write(render(pr, apps, runs, _now()))
    return 0


async def _watch(ctx: Context, name: str, output: str | None) -> int:
    await _get(ctx, name)  # a clear error before watching
    changed, stop = asyncio.Event(), asyncio.Event()
    ns = ctx.namespace

    def inf(gvk: Any, field_selector: str | None = None) -> Informer:
        i = Informer(ctx.client, gvk, reading(ns, field_selector))
        i.add_handler(
            FuncHandler(
                add=lambda _: changed.set(),
                update=lambda _a, _b: changed.set(),
                delete=lambda _: changed.set(),
            )
        )
        return i

    prs, apps, runs = (
        inf(PROGRESSIVE_ROLLOUT, f"metadata.name={name}"),
        inf(APPLICATION),
        inf(ANALYSIS_RUN),
    )
    informers = [prs, apps, runs]

    def interrupt() -> None:
        stop.set()
        changed.set()

    tasks = [asyncio.create_task(i.run()) for i in informers]
    try:
        with on_interrupt(interrupt):
            if not await synced(informers, stop):
                return 0
            last: str | None = None
            first = True
            while not stop.is_set():
                changed.clear()
                pr = prs.store.get(name, ns)
                if pr is None:
                    text = (
                        f"progressiverollout {name} not found in namespace {ns}; waiting for it\n"
                    )
                elif output:
                    text = dump(pr, output)
                else:
                    text = render(
                        pr,
                        {a["metadata"]["name"]: a for a in apps.store.list(ns)},
                        {r["metadata"]["name"]: r for r in runs.store.list(ns)},
                        _now(),
                    )
                if text != last:
                    last = text
                    if ctx.tty:
                        ctx.out.write(CLEAR)
                    elif not first and output != "json":
                        ctx.out.write(SEPARATOR)
                    ctx.out.write(text)
                    ctx.out.flush()
                    first = False
                with_timeout = asyncio.ensure_future(changed.wait())
                await asyncio.wait({with_timeout}, timeout=1.0)  # bake countdown moves on
                with_timeout.cancel()
                if not stop.is_set():
                    await asyncio.sleep(DEBOUNCE)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return 0


def _token() -> str:
    return f"{_now():%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


async def _request(ctx: Context, name: str, key: str, token: str, action: str) -> None:
    """Annotate the ProgressiveRollout `name` with a request (`key`: its fresh `token`) and,
    in the same write, the user making it."""
    patch = annotation_patch(key, token)
    patch["metadata"]["annotations"].update(await ctx.acting(action, token))
    await ctx.client.patch(PROGRESSIVE_ROLLOUT, name, patch, namespace=ctx.namespace)


async def promote_rollout(ctx: Context, name: str) -> int:
    pr = await _get(ctx, name)
    token = _token()
    await _request(ctx, name, PROMOTE, token, "promote")
    phase = (pr.get("status") or {}).get("phase") or "Pending"
    ctx.say(
        f"progressiverollout {name}: promoted ({phase}): bake time ends now and an "
        f"inconclusive analysis is accepted [{PROMOTE}={token}]"
    )
    return 0


async def abort_rollout(ctx: Context, name: str) -> int:
    pr = await _get(ctx, name)
    token = _token()
    await _request(ctx, name, ABORT, token, "abort")
    policy = (pr.get("spec") or {}).get("failurePolicy", "Pause")
    then = (
        "the clusters it updated are synced back to their previous revision"
        if policy == "Rollback"
        else "no further syncs until okra resume"
    )
    ctx.say(f"progressiverollout {name}: aborting; {then} [{ABORT}={token}]")
    return 0


async def pause_rollout(ctx: Context, name: str) -> int:
    await _get(ctx, name)
    await ctx.client.patch(
        PROGRESSIVE_ROLLOUT, name, {"spec": {"paused": True}}, namespace=ctx.namespace
    )
    ctx.say(f"progressiverollout {name}: paused (syncs already started finish)")
    return 0


async def resume_rollout(ctx: Context, name: str) -> int:
    pr = await _get(ctx, name)
    st = pr.get("status") or {}
    patch: Obj = {"spec": {"paused": False}}
    retry = st.get("phase") in ("Failed", "RolledBack") or bool(st.get("aborted"))
    if retry:
        token = _token()
        patch["metadata"] = {"annotations": {RETRY: token, **await ctx.acting("retry", token)}}
    await ctx.client.patch(PROGRESSIVE_ROLLOUT, name, patch, namespace=ctx.namespace)
    what = "retrying the failed stage" if st.get("phase") == "Failed" else "resumed"
    if st.get("phase") == "RolledBack":
        what = "retrying the rolled-back revision from the first stage"
    ctx.say(f"progressiverollout {name}: {what}")
    return 0


def or_rollout(
    cell_handler: Handler, rollout_handler: Callable[[Context, str], Awaitable[int]]
) -> Handler:
    """`okra promote|abort NAME`: the Cell NAME if there is one, else the ProgressiveRollout."""

    async def handler(ctx: Context, args: argparse.Namespace) -> int:
        name = args.cell
        if await get_or_none(ctx.client, CELL, name, ctx.namespace) is not None:
            return await cell_handler(ctx, args)
        try:
            found = await get_or_none(ctx.client, PROGRESSIVE_ROLLOUT, name, ctx.namespace)
        except NoKindMatchError:
            found = None  # ProgressiveRollout's CRD not installed
        if found is None:
            return await cell_handler(ctx, args)  # its "not found" names the Cell
        return await rollout_handler(ctx, name)

    return handler


async def cmd_promote_any(ctx: Context, args: argparse.Namespace) -> int:
    """`okra promote NAME`: the Cell NAME, else the ProgressiveRollout NAME."""
    return await or_rollout(fanout.cmd_promote, promote_rollout)(ctx, args)


async def cmd_pause_any(ctx: Context, args: argparse.Namespace) -> int:
    """`okra pause NAME`: the Cell NAME, else the ProgressiveRollout NAME."""
    return await or_rollout(fanout.cmd_pause, pause_rollout)(ctx, args)


async def cmd_abort_any(ctx: Context, args: argparse.Namespace) -> int:
    """`okra abort NAME`: the Cell NAME, else the ProgressiveRollout NAME."""
    return await or_rollout(fanout.cmd_abort, abort_rollout)(ctx, args)


async def cmd_resume_any(ctx: Context, args: argparse.Namespace) -> int:
    """`okra resume NAME`: the Cell NAME (a system: its applications too), else the
    ProgressiveRollout NAME."""
    return await or_rollout(fanout.cmd_resume, resume_rollout)(ctx, args)
