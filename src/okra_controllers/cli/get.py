"""`okra get cell NAME [--watch]`, `okra get cells [-A] [--watch]`, `okra get targetgroups`,
`okra get clusters`; `-o json|yaml|wide|name` where a table is printed.

`--watch` keeps an informer per kind shown (the Cell, the namespace's
AWSTargetGroups and AnalysisRuns, the Cell's load balancer config and
VersionBlocklist): it lists once, then follows watch events, resuming by
itself after dropped or expired watches. Every change re-renders the view from
the caches; a frame is printed only when something shown changed (resource
versions), so unrelated objects in the namespace cause no output. On a
terminal the screen is cleared between frames; otherwise frames are separated
by `---` lines (JSON frames are simply concatenated, as `jq` reads them).
`follow` is that loop for any view; `get cells --watch` and `get analysisrun
--watch` use it too.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
from collections.abc import Callable, Hashable
from typing import Any

import yaml

from okra_controllers.api.kinds import ANALYSIS_RUN, BLOCKLIST, CELL, SECRET, TARGET_GROUP
from okra_controllers.api.v1alpha1.common import GROUP, VERSION
from okra_controllers.cell.observe import (
    ALB_CONFIG_KIND,
    NLB_CONFIG_KIND,
    config_gvk,
    config_kind,
)
from okra_controllers.cell.system.names import SYSTEM_LABEL
from okra_controllers.cli.kube import Context, get_or_none, on_interrupt, reading, synced
from okra_controllers.cli.render import (
    ARGOCD_SECRET_TYPE,
    cluster_rows,
    render_cell,
    render_cells,
    render_clusters,
    render_target_groups,
)
from okra_controllers.cli.system import is_system, render_system_cell
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
from okra_runtime.informer import FuncHandler, Informer

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


def names(items: list[Obj], resource: str) -> str:
    """`-o name`: `<resource>/<name>` per line, as kubectl prints it."""
    return "".join(f"{resource}/{(i.get('metadata') or {}).get('name')}\n" for i in items)


def objects(items: list[Obj], output: str | None, resource: str) -> str | None:
    """The `-o json|yaml|name` rendering of a list; None for a table (`wide` or none)."""
    if output in ("json", "yaml"):
        return dump(as_list(items), output)
    if output == "name":
        return names(items, resource)
    return None


def write_list(
    ctx: Context,
    items: list[Obj],
    output: str | None,
    resource: str,
    none_found: str,
    table: Callable[[], str],
) -> None:
    """A list as `-o` asks (json, yaml, name), else `table()`; when there is nothing to
    show, `<none_found> in <namespace>.` on stderr."""
    shown = objects(items, output, resource)
    if shown is not None:
        ctx.out.write(shown)
    elif not items:
        ctx.err.write(f"{none_found} in {ctx.listed_in}.\n")
    else:
        ctx.out.write(table())


def frame(view: CellView, output: str | None, color: bool) -> str:
    if output:
        return dump(view.document(), output)
    return render_cell(
        view.cell, view.target_groups, view.config, view.runs, view.blocklist, now(), color=color
    )


async def cmd_get_cell(ctx: Context, args: argparse.Namespace) -> int:
    cell = await get_cell(ctx.client, args.name, ctx.namespace)
    if is_system(cell):
        return await get_system_cell(ctx, args)
    if args.watch:
        return await watch_cell(ctx, args.name, args.output)
    view = await fetch_view(ctx.client, args.name, ctx.namespace)
    ctx.out.write(frame(view, args.output, ctx.color))
    return 0


async def get_system_cell(ctx: Context, args: argparse.Namespace) -> int:
    """A system Cell as a tree (or, with `-o json|yaml`, with its applications' Cells);
    with `--watch`, a new frame whenever it or one of them changes."""
    name, ns = args.name, ctx.namespace

    def text(cells: list[Obj]) -> str:
        cell = next((c for c in cells if c["metadata"]["name"] == name), None)
        if cell is None:
            return f"cell {name} not found in namespace {ns}; waiting for it\n"
        children = [
            c for c in cells if (c["metadata"].get("labels") or {}).get(SYSTEM_LABEL) == name
        ]
        if args.output in ("json", "yaml"):
            return dump(
                {"cell": strip(cell), "applications": [strip(c) for c in children]}, args.output
            )
        return render_system_cell(cell, children, now())

    if args.watch:
        informer = Informer(ctx.client, CELL, reading(ns))

        def view() -> tuple[Hashable, str]:
            cells = informer.store.list()
            key = tuple(sorted(_version_key(c) for c in cells))
            return key, text(cells)

        return await follow(ctx, [informer], view, json_frames=args.output == "json")
    ctx.out.write(text((await ctx.client.list(CELL, ns)).items))
    return 0


async def cmd_get_cells(ctx: Context, args: argparse.Namespace) -> int:
    wide = args.output == "wide"

    def text(cells: list[Obj]) -> str:
        shown = objects(cells, args.output, "cell.okra.mumo.co")
        if shown is not None:
            return shown
        if not cells:
            return f"No cells found in {ctx.listed_in}.\n"
        return render_cells(cells, now(), color=ctx.color, namespaces=ctx.all_namespaces, wide=wide)

    if args.watch:
        informer = Informer(ctx.client, CELL, reading(ctx.list_namespace))

        def view() -> tuple[Hashable, str]:
            cells = informer.store.list()
            key = tuple(sorted(_version_key(c) for c in cells))
            return key, text(cells)

        return await follow(ctx, [informer], view, json_frames=args.output == "json")
    cells = (await ctx.client.list(CELL, ctx.list_namespace)).items
    if not cells and args.output is None:
        ctx.err.write(text(cells))
    else:
        ctx.out.write(text(cells))
    return 0


def _version_key(obj: Obj) -> str:
    m = obj.get("metadata") or {}
    return f"{m.get('namespace')}/{m.get('name')}@{m.get('resourceVersion')}"


async def cmd_get_target_groups(ctx: Context, args: argparse.Namespace) -> int:
    ns = ctx.list_namespace
    tgs = (await ctx.client.list(TARGET_GROUP, ns)).items
    if args.cell:
        cell = await get_cell(ctx.client, args.cell, ctx.namespace)
        tgs = [
            t
            for t in tgs
            if t["metadata"].get("namespace") == ctx.namespace and selects(cell_selector(cell), t)
        ]
        config = await get_or_none(ctx.client, config_gvk(cell), args.cell, ctx.namespace)
        cells, configs = [cell], [config] if config else []
    else:
        cells = (await ctx.client.list(CELL, ns)).items
        configs = [
            c
            for kind in CONFIG_KINDS
            for c in (await ctx.client.list(GVK(GROUP, VERSION, kind), ns)).items
        ]

    def table() -> str:
        return render_target_groups(
            tgs,
            cells,
            configs,
            show_cell=not args.cell,
            color=ctx.color,
            namespaces=ctx.all_namespaces,
            wide=args.output == "wide",
        )

    none_found = "No target groups found" + (f" for cell {args.cell}" if args.cell else "")
    write_list(ctx, tgs, args.output, "awstargetgroup.okra.mumo.co", none_found, table)
    return 0


CONFIG_KINDS = (ALB_CONFIG_KIND, NLB_CONFIG_KIND)


async def cmd_get_clusters(ctx: Context, args: argparse.Namespace) -> int:
    """Argo CD cluster Secrets. `-o` prints the same fields as the table, not the Secrets:
    their `config` holds credentials and CA data, which this command never prints."""
    secrets = (
        await ctx.client.list(
            SECRET, ctx.list_namespace, label_selector=f"{ARGOCD_SECRET_TYPE}=cluster"
        )
    ).items
    if args.output in ("json", "yaml"):
        ctx.out.write(dump(cluster_rows(secrets), args.output))
    elif args.output == "name":
        ctx.out.write(names(secrets, "secret"))
    elif not secrets:
        ctx.err.write(f"No Argo CD cluster Secrets found in {ctx.listed_in}.\n")
    else:
        ctx.out.write(render_clusters(secrets, color=ctx.color, namespaces=ctx.all_namespaces))
    return 0


class CellWatch:
    """Informers for everything `okra get cell` shows (`follow` raises `changed` on any
    change)."""

    def __init__(self, ctx: Context, name: str) -> None:
        self.name, self.namespace = name, ctx.namespace
        self.changed = asyncio.Event()
        by_name = f"metadata.name={name}"
        ns = ctx.namespace

        def inf(gvk: Any, field_selector: str | None = None) -> Informer:
            return Informer(ctx.client, gvk, reading(ns, field_selector))

        self.cell = inf(CELL, by_name)
        self.target_groups = inf(TARGET_GROUP)
        self.configs = {kind: inf(GVK(GROUP, VERSION, kind), by_name) for kind in CONFIG_KINDS}
        self.runs = inf(ANALYSIS_RUN)
        self.blocklist = inf(BLOCKLIST, by_name)
        self.informers = [
            self.cell,
            self.target_groups,
            *self.configs.values(),
            self.runs,
            self.blocklist,
        ]

    def view(self) -> CellView | None:
        cell = self.cell.store.get(self.name, self.namespace)
        if cell is None:
            return None
        return select_view(
            cell,
            self.target_groups.store.list(self.namespace),
            self.configs[config_kind(cell)].store.list(self.namespace),
            self.runs.store.list(self.namespace),
            self.blocklist.store.list(self.namespace),
        )


async def watch_cell(ctx: Context, name: str, output: str | None) -> int:
    """Print the view, then a new frame on every change, until SIGINT/SIGTERM (exit 0)."""
    await get_cell(ctx.client, name, ctx.namespace)  # a clear error before watching
    w = CellWatch(ctx, name)

    def view() -> tuple[Hashable, str]:
        v = w.view()
        if v is None:
            return (
                "missing",
            ), f"cell {w.name} not found in namespace {w.namespace}; waiting for it\n"
        try:
            return v.fingerprint(), frame(v, output, ctx.color)
        except ValueError as e:
            return v.fingerprint(), f"cell {w.name} cannot be shown: {e}\n"

    return await follow(ctx, w.informers, view, json_frames=output == "json", changed=w.changed)


async def follow(
    ctx: Context,
    informers: list[Informer],
    view: Callable[[], tuple[Hashable, str]],
    *,
    json_frames: bool = False,
    changed: asyncio.Event | None = None,
    until: Callable[[], int | None] | None = None,
) -> int:
    """Run `informers`; print `view()`'s text whenever its key changes, until SIGINT/SIGTERM
    (exit 0) or until `until()` returns an exit code."""
    changed = changed or asyncio.Event()
    for i in informers:
        i.add_handler(
            FuncHandler(
                add=lambda _: changed.set(),
                update=lambda _a, _b: changed.set(),
                delete=lambda _: changed.set(),
            )
        )
    stop = asyncio.Event()

    def interrupt() -> None:
        stop.set()
        changed.set()

    tasks = [asyncio.create_task(i.run(), name=f"informer {i.name}") for i in informers]
    try:
        with on_interrupt(interrupt):
            if not await synced(informers, stop):
                return 0
            last: Hashable = object()
            first = True
            while not stop.is_set():
                changed.clear()
                key, text = view()
                if key != last:
                    last = key
                    if ctx.tty:
                        ctx.out.write(CLEAR)
                        if not json_frames:
                            text += f"\n(updated {now():%H:%M:%S}; watching, Ctrl-C to stop)\n"
                    elif not first and not json_frames:
                        ctx.out.write(SEPARATOR)
                    ctx.out.write(text)
                    ctx.out.flush()
                    first = False
                if until is not None and (code := until()) is not None:
                    return code
                await changed.wait()
                if not stop.is_set():
                    await asyncio.sleep(DEBOUNCE)  # one frame for a burst of events
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return 0
