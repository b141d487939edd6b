"""`okra dashboard`: an aiohttp server that shows the cluster as okra sees it, live.

Reading: one informer per kind (Cells, their load balancer configs, AnalysisRuns,
VersionBlocklists, AWSTargetGroups, ClusterSets, ProgressiveRollouts, Checks, okra's Events),
never one per Cell, with the user's kubeconfig. A kind the user may not read (RBAC) or
that is not installed stays empty and the page says why. Secrets are never read.

Pushing: every change wakes `Dashboard.pump`, which (after a short debounce, one frame
for a burst) recomputes the rows from the caches and the weights history. Each open
page holds one server-sent-events stream (`GET /api/events[?cell=ns/name]`) and gets
only what changed since its last frame: keyed rows to set or delete per section, and
the Cell page's whole detail when it changed. The page never polls.

Acting: `POST /api/{cells|rollouts|freezes|clusterfreezes}/{ns}/{name}/{action}` runs the
CLI's own command functions (`okra promote`, `promote --full`, `abort`, `retry`, `pause`,
`resume`, `unfreeze [--cluster-wide]` as `lift`; a ClusterFreeze's `ns` is `*`) with the
user's credentials; on a system Cell they act on every
application Cell of the system, or with `?application=NAME` on one (`cli.fanout`, as
`okra promote SYSTEM --application NAME` does); their messages, or the API server's
refusal (a 403 is the user's RBAC), come back as JSON for the page to show. `--read-only`
refuses them (and the page hides them). A POST must carry the `X-Okra-Dashboard` header,
which a page of another origin cannot send without a CORS preflight that this server never
grants. On a loopback address, a request naming any other host (`Host:`) is refused, so that
a page of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) cannot
read the stream.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import io
import json
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from okra_controllers.api.kinds import (
    ANALYSIS_RUN,
    BLOCKLIST,
    CELL,
    CHECK,
    CLUSTER_FREEZE,
    CLUSTERSET,
    EVENT,
    FREEZE,
    PROGRESSIVE_ROLLOUT,
    TARGET_GROUP,
)
from okra_controllers.api.v1alpha1.common import GROUP, VERSION
from okra_controllers.cell.observe import (
    ALB_CONFIG_KIND,
    NLB_CONFIG_KIND,
    ROUTE53_CONFIG_KIND,
    config_kind,
)
from okra_controllers.cell.system.names import APP_LABEL
from okra_controllers.cli import fanout, progressive
from okra_controllers.cli import freeze as freeze_cli
from okra_controllers.cli.dashboard import model, systems
from okra_controllers.cli.kube import CliError, Context, on_interrupt, reading
from okra_controllers.cli.system import is_system
from okra_runtime.client import Client
from okra_runtime.errors import ApiError
from okra_runtime.gvk import GVK
from okra_runtime.informer import FuncHandler, Informer, InformerOptions

OKRA_EVENTS = f"regarding.apiVersion={GROUP}/{VERSION}"
CONFIG_KINDS = (ALB_CONFIG_KIND, NLB_CONFIG_KIND, ROUTE53_CONFIG_KIND)
DEBOUNCE = 0.05
HEARTBEAT = 15.0
HEADER = "X-Okra-Dashboard"
SECTIONS = ("cells", "rollouts", "clustersets", "targetgroups", "freezes")
FREEZE_TICK = 5.0  # seconds: a freeze's window opens and closes with no object changing
STATIC = resources.files("okra_controllers.cli.dashboard") / "static"
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

Obj = dict[str, Any]
Action = Callable[[Context, str], Awaitable[int]]
CellAction = Callable[[Context, str, str | None], Awaitable[int]]


def _ns(**kw: Any) -> argparse.Namespace:
    return argparse.Namespace(**kw)


CELL_ACTIONS: dict[str, CellAction] = {
    # The CLI's own commands (cli.fanout): on a system Cell each acts on every application
    # Cell of the system, or with an application (`?application=NAME`) on that one.
    "promote": lambda ctx, n, a: fanout.cmd_promote(ctx, _ns(cell=n, full=False, application=a)),
    "promote-full": lambda ctx, n, a: fanout.cmd_promote(
        ctx, _ns(cell=n, full=True, application=a)
    ),
    "abort": lambda ctx, n, a: fanout.cmd_abort(ctx, _ns(cell=n, application=a)),
    "retry": lambda ctx, n, a: fanout.cmd_retry(ctx, _ns(cell=n, version=None, application=a)),
    "pause": lambda ctx, n, a: fanout.cmd_pause(ctx, _ns(cell=n, application=a)),
    "resume": lambda ctx, n, a: fanout.cmd_resume(ctx, _ns(cell=n, application=a)),
}
FREEZE_ACTIONS: dict[str, Action] = {
    "lift": lambda ctx, n: freeze_cli.cmd_unfreeze(ctx, _ns(name=n, cluster_wide=False)),
}
CLUSTER_FREEZE_ACTIONS: dict[str, Action] = {
    "lift": lambda ctx, n: freeze_cli.cmd_unfreeze(ctx, _ns(name=n, cluster_wide=True)),
}
ROLLOUT_ACTIONS: dict[str, Action] = {
    "promote": progressive.promote_rollout,
    "abort": progressive.abort_rollout,
    "pause": progressive.pause_rollout,
    "resume": progressive.resume_rollout,
}


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class Dashboard:
    """The informers, the rows computed from them, and the pages following them."""

    def __init__(self, client: Client, namespace: str | None, *, read_only: bool = False) -> None:
        self.client, self.namespace, self.read_only = client, namespace, read_only
        self.changed = asyncio.Event()
        self.frame = asyncio.Condition()
        self.version = 0
        self.history = model.History()
        self.rows: dict[str, dict[str, Obj]] = {s: {} for s in SECTIONS}

        def inf(gvk: GVK, field_selector: str | None = None) -> Informer:
            options: InformerOptions = reading(namespace, field_selector)
            return Informer(client, gvk, options)

        self.cells = inf(CELL)
        self.configs = {kind: inf(GVK(GROUP, VERSION, kind)) for kind in CONFIG_KINDS}
        self.runs = inf(ANALYSIS_RUN)
        self.blocklists = inf(BLOCKLIST)
        self.target_groups = inf(TARGET_GROUP)
        self.cluster_sets = inf(CLUSTERSET)
        self.rollouts = inf(PROGRESSIVE_ROLLOUT)
        self.events = inf(EVENT, OKRA_EVENTS)
        self.freezes = inf(FREEZE)
        # every ClusterFreeze, whatever namespace the dashboard shows: one may hold it
        self.cluster_freezes = Informer(client, CLUSTER_FREEZE, reading(None))
        self.checks = inf(CHECK)
        self.informers = [
            self.cells,
            *self.configs.values(),
            self.runs,
            self.blocklists,
            self.target_groups,
            self.cluster_sets,
            self.rollouts,
            self.events,
            self.freezes,
            self.cluster_freezes,
            self.checks,
        ]
        for i in self.informers:
            i.add_handler(
                FuncHandler(
                    add=lambda _: self.changed.set(),
                    update=lambda _a, _b: self.changed.set(),
                    delete=lambda _: self.changed.set(),
                )
            )

    # -- computing ---------------------------------------------------------------

    def _config(self, cell: Obj) -> Obj | None:
        meta = cell.get("metadata") or {}
        store = self.configs[config_kind(cell)].store
        return store.peek(f"{meta.get('namespace')}/{meta.get('name')}")

    def _runs_by_name(self) -> dict[str, dict[str, Obj]]:
        out: dict[str, dict[str, Obj]] = {}
        for run in self.runs.store.raw_items().values():
            meta = run.get("metadata") or {}
            out.setdefault(str(meta.get("namespace")), {})[str(meta.get("name"))] = run
        return out

    def compute(self) -> None:
        """The rows of every section, from the caches; a weights point per Cell whose
        AWS weights changed."""
        at = now()
        runs = self._runs_by_name()
        cells: dict[str, Obj] = {}
        every = self.cells.store.raw_items()
        found = {k: c for k, c in every.items() if is_system(c)}
        children: dict[str, dict[str, tuple[Obj, Obj, Obj | None]]] = {}
        for cell in every.values():
            config = self._config(cell)
            row = model.cell_row(
                cell,
                config,
                runs.get(str((cell.get("metadata") or {}).get("namespace")), {}),
                self.blocklists.store.peek(model.key(cell)),
            )
            self.history.record(row["key"], model.aws_weights(cell, config), at)
            system = systems.system_of(cell, found)
            if system is None:
                cells[row["key"]] = row
            else:  # shown in its system's card
                app = str((cell["metadata"].get("labels") or {})[APP_LABEL])
                children.setdefault(system, {})[app] = (cell, row, config)
        checks = list(self.checks.store.raw_items().values())
        for k, system_cell in found.items():
            cells[k] = systems.system_row(system_cell, children.get(k, {}), checks)
        for gone in set(self.history.points) - set(every):
            self.history.forget(gone)
        self.rows = {
            "cells": cells,
            "rollouts": {
                r["key"]: r
                for r in map(model.rollout_row, self.rollouts.store.raw_items().values())
            },
            "clustersets": {
                r["key"]: r
                for r in map(model.cluster_set_row, self.cluster_sets.store.raw_items().values())
            },
            "targetgroups": {
                r["key"]: r
                for r in map(model.target_group_row, self.target_groups.store.raw_items().values())
            },
            "freezes": {
                f"{r['namespace'] or '*'}/{r['name']}": {
                    "key": f"{r['namespace'] or '*'}/{r['name']}",
                    **r,
                }
                for r in (
                    *(
                        freeze_cli.freeze_row(f, at)
                        for f in self.freezes.store.raw_items().values()
                    ),
                    *(
                        freeze_cli.freeze_row(f, at, cluster=True)
                        for f in self.cluster_freezes.store.raw_items().values()
                    ),
                )
            },
        }

    def meta(self) -> Obj:
        """What the page needs besides rows: the mode, and which kinds it cannot read."""
        return {
            "readOnly": self.read_only,
            "namespace": self.namespace,
            "synced": all(i.has_synced for i in (self.cells, self.rollouts)),
            "unreadable": {
                i.gvk.kind: i.health_message
                for i in self.informers
                if not i.healthy and not i.has_synced and i.health_message != "not started"
            },
        }

    def detail(self, cell_key: str) -> Obj | None:
        cell = self.cells.store.peek(cell_key)
        if cell is None:
            return None
        ns, _, name = cell_key.partition("/")
        events = [
            e
            for e in self.events.store.raw_items().values()
            if model.regarding(e) == ("Cell", ns, name)
        ]
        return model.cell_detail(
            cell,
            self._config(cell),
            (
                r
                for r in self.runs.store.raw_items().values()
                if r["metadata"].get("namespace") == ns
            ),
            self.blocklists.store.peek(cell_key),
            events,
            self.history.of(cell_key),
            now(),
        )

    async def pump(self) -> None:
        """Recompute after every burst of changes and wake the streams."""
        while True:
            await self.changed.wait()
            await asyncio.sleep(DEBOUNCE)
            self.changed.clear()
            self.compute()
            async with self.frame:
                self.version += 1
                self.frame.notify_all()

    async def tick_freezes(self) -> None:
        """While there are Freezes, recompute now and then: whether one applies changes
        with the time alone (a window opens or closes)."""
        while True:
            await asyncio.sleep(FREEZE_TICK)
            if len(self.freezes.store) or len(self.cluster_freezes.store):
                self.changed.set()

    # -- serving -----------------------------------------------------------------

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: the first frame has everything, later ones what changed."""
        cell_key = request.query.get("cell")
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        sent: dict[str, dict[str, Obj]] = {s: {} for s in SECTIONS}
        sent_meta: Obj | None = None
        sent_detail: Obj | bool | None = False
        while True:
            seen = self.version
            patch: Obj = {}
            meta = self.meta()
            if meta != sent_meta:
                patch["meta"] = sent_meta = meta
            rows = self.rows
            for section in SECTIONS:
                changed, deleted = model.diff(sent[section], rows[section])
                if changed or deleted:
                    patch[section] = {"set": changed, "del": deleted}
                    sent[section] = rows[section]
            if cell_key:
                detail = self.detail(cell_key)
                if detail != sent_detail:
                    patch["cell"] = sent_detail = detail
            if patch:
                patch["sent"] = time.time()
                await resp.write(f"data: {json.dumps(patch, default=str)}\n\n".encode())
            try:
                await asyncio.wait_for(self._next_frame(seen), HEARTBEAT)
            except TimeoutError:
                await resp.write(b": keep-alive\n\n")

    async def _next_frame(self, seen: int) -> None:
        async with self.frame:
            await self.frame.wait_for(lambda: self.version != seen)

    async def act(self, request: web.Request) -> web.Response:
        kind, action = request.match_info["kind"], request.match_info["action"]
        ns, name = request.match_info["namespace"], request.match_info["name"]
        if request.headers.get(HEADER) != "1":
            return web.json_response({"error": f"missing {HEADER} header"}, status=400)
        if self.read_only:
            return web.json_response({"error": "the dashboard is read-only"}, status=405)
        application = request.query.get("application") or None
        run: Action | None
        if kind == "cells":
            cell_run = CELL_ACTIONS.get(action)
            run = None if cell_run is None else (lambda c, n: cell_run(c, n, application))
        elif application is not None:
            return web.json_response({"error": "application: only a Cell has some"}, status=400)
        else:
            table = {"freezes": FREEZE_ACTIONS, "clusterfreezes": CLUSTER_FREEZE_ACTIONS}
            run = table.get(kind, ROLLOUT_ACTIONS).get(action)
        if run is None:
            return web.json_response({"error": f"unknown action {action}"}, status=404)
        out, err = io.StringIO(), io.StringIO()
        ctx = Context(self.client, ns, out=out, err=err)
        try:
            await run(ctx, name)
        except CliError as e:
            return web.json_response({"error": e.message}, status=409)
        except ApiError as e:
            forbidden = e.status == 403
            return web.json_response(
                {
                    "error": e.message or str(e),
                    "forbidden": forbidden,
                    "status": e.status,
                },
                status=403 if forbidden else 502,
            )
        self.changed.set()
        return web.json_response({"message": (out.getvalue() + err.getvalue()).strip()})

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info.get("file") or "index.html"
        path = STATIC / name
        suffix = "." + name.rsplit(".", 1)[-1]
        if "/" in name or suffix not in CONTENT_TYPES or not path.is_file():
            raise web.HTTPNotFound()
        return web.Response(
            body=path.read_bytes(),
            content_type=CONTENT_TYPES[suffix],
            charset="utf-8",
            headers={"Cache-Control": "no-cache"},
        )

    def app(self, address: str = "127.0.0.1") -> web.Application:
        app = web.Application(middlewares=[host_guard(address)])
        app.router.add_get("/", self.static)
        app.router.add_get("/static/{file}", self.static)
        app.router.add_get("/api/events", self.stream)
        app.router.add_post(
            "/api/{kind:cells|rollouts|freezes|clusterfreezes}/{namespace}/{name}/{action}",
            self.act,
        )
        return app

    @contextlib.asynccontextmanager
    async def running(self) -> Any:
        """The informers and the pump, running while inside."""
        tasks = [asyncio.create_task(i.run(), name=f"informer {i.name}") for i in self.informers]
        tasks.append(asyncio.create_task(self.pump(), name="dashboard pump"))
        tasks.append(asyncio.create_task(self.tick_freezes(), name="dashboard freezes"))
        self.changed.set()
        try:
            yield self
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def host_guard(address: str) -> Any:
    """Middleware: on a loopback `address`, only requests naming a loopback host pass."""
    loopback = address in LOOPBACK_NAMES or address.startswith("127.")

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        host = (request.host or "").rsplit(":", 1)[0].strip("[]") if request.host else ""
        if loopback and host not in LOOPBACK_NAMES and host != address:
            return web.Response(status=421, text=f"this dashboard answers {address} only\n")
        response: web.StreamResponse = await handler(request)
        return response

    return guard


async def serve(
    dashboard: Dashboard, address: str, port: int, on_listening: Callable[[str], None]
) -> web.AppRunner:
    runner = web.AppRunner(dashboard.app(address), access_log=None, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, address, port)
    await site.start()
    server = site._server
    sockets = getattr(server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    host = f"[{address}]" if ":" in address else address
    on_listening(f"http://{host}:{bound}/")
    return runner


async def cmd_dashboard(ctx: Context, args: argparse.Namespace) -> int:
    """Serve until Ctrl-C/SIGTERM."""
    dashboard = Dashboard(ctx.client, ctx.list_namespace, read_only=args.read_only)
    stop = asyncio.Event()
    async with dashboard.running():
        runner = await serve(
            dashboard,
            args.address,
            args.port,
            lambda url: ctx.say(f"okra dashboard: {url}  (Ctrl-C stops it)"),
        )
        try:
            with on_interrupt(stop.set):
                await stop.wait()
        finally:
            await runner.cleanup()
    return 0
