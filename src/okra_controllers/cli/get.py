"""`okra get cell NAME [--watch]`, `okra get cells`, `okra get targetgroups`, `okra get clusters`.

`--watch` keeps an informer per kind shown (the Cell, the namespace's
AWSTargetGroups and AnalysisRuns, the Cell's load balancer config and
VersionBlocklist): it lists once, then follows watch events, resuming by
itself after dropped or expired watches. Every change re-renders the view from
the caches; a frame is printed only when something shown changed (resource
versions), so unrelated objects in the namespace cause no output. On a
terminal the screen is cleared between frames; otherwise frames are separated
by `---` lines (JSON frames are simply concatenated, as `jq` reads them).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
from typing import Any

import yaml

from okra_controllers.analysis.run_controller import ANALYSIS_RUN
from okra_controllers.cell.controller import ALB_CONFIG, BLOCKLIST, CELL, TARGET_GROUP
from okra_controllers.cli.kube import Context, get_or_none, on_interrupt, synced
from okra_controllers.cli.render import (
    ARGOCD_SECRET_TYPE,
    cluster_rows,
    render_cell,
    render_cells,
    render_clusters,
    render_target_groups,
)
from okra_controllers.cli.view import (
    CellView,
    Obj,
    cell_selector,
    fetch_view,
    get_cell,
    select_view,
    selects,
    strip,
)
from okra_runtime.gvk import GVK
from okra_runtime.informer import FuncHandler, Informer, InformerOptions

DEBOUNCE = 0.05
CLEAR = "\x1b[H\x1b[2J"
SEPARATOR = "---\n"


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def dump(doc: Any, output: str) -> str:
    if output == "json":
        return json.dumps(doc, indent=2, default=str) + "\n"
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def as_list(items: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "items": [strip(i) for i in items]}


def frame(view: CellView, output: str | None, color: bool) -> str:
    if output:
        return dump(view.document(), output)
    return render_cell(
        view.cell, view.target_groups, view.config, view.runs, view.blocklist, now(), color=color
    )


async def cmd_get_cell(ctx: Context, args: argparse.Namespace) -> int:
    if args.watch:
        return await watch_cell(ctx, args.name, args.output)
    view = await fetch_view(ctx.client, args.name, ctx.namespace)
    ctx.out.write(frame(view, args.output, ctx.color))
    return 0


async def cmd_get_cells(ctx: Context, args: argparse.Namespace) -> int:
    cells = (await ctx.client.list(CELL, ctx.namespace)).items
    if args.output:
        ctx.out.write(dump(as_list(cells), args.output))
    elif not cells:
        ctx.err.write(f"No cells found in namespace {ctx.namespace}.\n")
    else:
        ctx.out.write(render_cells(cells, now(), color=ctx.color))
    return 0


async def cmd_get_target_groups(ctx: Context, args: argparse.Namespace) -> int:
    ns = ctx.namespace
    tgs = (await ctx.client.list(TARGET_GROUP, ns)).items
    if args.cell:
        cell = await get_cell(ctx.client, args.cell, ns)
        tgs = [t for t in tgs if selects(cell_selector(cell), t)]
        config = await get_or_none(ctx.client, ALB_CONFIG, args.cell, ns)
        cells, configs = [cell], [config] if config else []
    else:
        cells = (await ctx.client.list(CELL, ns)).items
        configs = (await ctx.client.list(ALB_CONFIG, ns)).items
    if args.output:
        ctx.out.write(dump(as_list(tgs), args.output))
    elif not tgs:
        where = f" for cell {args.cell}" if args.cell else ""
        ctx.err.write(f"No target groups found{where} in namespace {ns}.\n")
    else:
        ctx.out.write(
            render_target_groups(tgs, cells, configs, show_cell=not args.cell, color=ctx.color)
        )
    return 0


SECRET = GVK("", "v1", "Secret")


async def cmd_get_clusters(ctx: Context, args: argparse.Namespace) -> int:
    """Argo CD cluster Secrets. `-o` prints the same fields as the table, not the Secrets:
    their `config` holds credentials and CA data, which this command never prints."""
    secrets = (
        await ctx.client.list(SECRET, ctx.namespace, label_selector=f"{ARGOCD_SECRET_TYPE}=cluster")
    ).items
    if args.output:
        ctx.out.write(dump(cluster_rows(secrets), args.output))
    elif not secrets:
        ctx.err.write(f"No Argo CD cluster Secrets found in namespace {ctx.namespace}.\n")
    else:
        ctx.out.write(render_clusters(secrets, color=ctx.color))
    return 0


class CellWatch:
    """Informers for everything `okra get cell` shows, and a flag raised on any change."""

    def __init__(self, ctx: Context, name: str) -> None:
        self.name, self.namespace = name, ctx.namespace
        self.changed = asyncio.Event()
        by_name = f"metadata.name={name}"
        ns = ctx.namespace

        def inf(gvk: Any, field_selector: str | None = None) -> Informer:
            i = Informer(
                ctx.client, gvk, InformerOptions(namespace=ns, field_selector=field_selector)
            )
            i.add_handler(
                FuncHandler(
                    add=lambda _: self.changed.set(),
                    update=lambda _a, _b: self.changed.set(),
                    delete=lambda _: self.changed.set(),
                )
            )
            return i

        self.cell = inf(CELL, by_name)
        self.target_groups = inf(TARGET_GROUP)
        self.config = inf(ALB_CONFIG, by_name)
        self.runs = inf(ANALYSIS_RUN)
        self.blocklist = inf(BLOCKLIST, by_name)
        self.informers = [self.cell, self.target_groups, self.config, self.runs, self.blocklist]

    def view(self) -> CellView | None:
        cell = self.cell.store.get(self.name, self.namespace)
        if cell is None:
            return None
        return select_view(
            cell,
            self.target_groups.store.list(self.namespace),
            self.config.store.list(self.namespace),
            self.runs.store.list(self.namespace),
            self.blocklist.store.list(self.namespace),
        )


async def watch_cell(ctx: Context, name: str, output: str | None) -> int:
    """Print the view, then a new frame on every change, until SIGINT/SIGTERM (exit 0)."""
    await get_cell(ctx.client, name, ctx.namespace)  # a clear error before watching
    w = CellWatch(ctx, name)
    stop = asyncio.Event()

    def interrupt() -> None:
        stop.set()
        w.changed.set()

    tasks = [asyncio.create_task(i.run(), name=f"informer {i.name}") for i in w.informers]
    try:
        with on_interrupt(interrupt):
            if not await synced(w.informers, stop):
                return 0
            await _frames(ctx, w, output, stop)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return 0


async def _frames(ctx: Context, w: CellWatch, output: str | None, stop: asyncio.Event) -> None:
    last: tuple[str, ...] | None = None
    first = True
    while not stop.is_set():
        w.changed.clear()
        view = w.view()
        key = view.fingerprint() if view is not None else ("missing",)
        if key != last:
            last = key
            if view is None:
                text = f"cell {w.name} not found in namespace {w.namespace}; waiting for it\n"
            else:
                try:
                    text = frame(view, output, ctx.color)
                except ValueError as e:
                    text = f"cell {w.name} cannot be shown: {e}\n"
            if ctx.tty:
                ctx.out.write(CLEAR)
                if not output:
                    text += f"\n(updated {now():%H:%M:%S}; watching, Ctrl-C to stop)\n"
            elif not first and output != "json":
                ctx.out.write(SEPARATOR)
            ctx.out.write(text)
            ctx.out.flush()
            first = False
        await w.changed.wait()
        if not stop.is_set():
            await asyncio.sleep(DEBOUNCE)  # one frame for a burst of events
