"""The manager runs everything a controller process needs, in order:

1. `/healthz`, `/readyz` and `/metrics` servers;
2. one shared informer per (kind, namespace), however many controllers use it;
3. waits for every cache to sync (/readyz turns green only then);
4. leader election, if enabled (informers run on every replica so standbys
   are warm; controllers and other leader runnables run on the leader only);
5. controllers and runnables, until `stop()`, SIGTERM/SIGINT, or lost leadership.

Shutdown is graceful with a deadline: controllers stop taking work and finish
in-flight reconciles for at most `graceful_shutdown_timeout` seconds, then are
cancelled; a held lease is released so a standby takes over at once. Losing
leadership stops controllers immediately and `start()` raises
LeadershipLostError: the process should exit and be restarted, as
controller-runtime does.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from okra_runtime.builder import Builder, as_gvk
from okra_runtime.client import Client
from okra_runtime.controller import Controller
from okra_runtime.events import EventRecorder
from okra_runtime.gvk import GVK
from okra_runtime.hotloop import HotLoopGuard, HotLoopOptions
from okra_runtime.informer import Informer, InformerOptions
from okra_runtime.leaderelection import LeaderElector, LeadershipLostError
from okra_runtime.metrics import REGISTRY
from okra_runtime.priority import PriorityGate

log = structlog.get_logger("okra_runtime.manager")
Check = Callable[[], str | None]  # returns None when fine, else what is wrong
_ALL = object()


@dataclass
class ManagerOptions:
    namespace: str | None = None  # watch one namespace; None: all
    metrics_address: str | None = "127.0.0.1:8080"  # "host:port"; port 0 picks one
    probe_address: str | None = "127.0.0.1:8081"
    leader_election: bool = False
    leader_election_id: str = "okra-runtime-leader"
    leader_election_namespace: str = "default"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    informer: InformerOptions = field(default_factory=InformerOptions)
    # Kinds whose informers see only objects matching a label selector (controller-runtime's
    # cache.Options.ByObject[...].Label): a controller that needs only the Secrets or Jobs
    # it labels does not list, watch and hold every Secret or Job of the cluster.
    label_selectors: dict[GVK, str] = field(default_factory=dict)
    # an object this process changes faster than this, for this long, is logged and counted
    # (`okra_runtime.hotloop`): a controller that never settles
    hot_loop: HotLoopOptions = field(default_factory=HotLoopOptions)


@dataclass
class _Runnable:
    name: str
    start: Callable[[], Awaitable[None]]
    needs_leader: bool
    stop: Callable[[], Awaitable[None]] | None = None


class Manager:
    def __init__(self, client: Client, options: ManagerOptions | None = None, **kwargs: object):
        self.client = client
        self.options = options or ManagerOptions(**kwargs)  # type: ignore[arg-type]
        self._informers: dict[tuple[GVK, str | None], Informer] = {}
        self._informers_of: dict[GVK, list[Informer]] = {}
        client.on_write(self._wrote)
        self.hot_loops = HotLoopGuard(self.options.hot_loop)
        client.on_write(self.hot_loops.wrote)
        self._runnables: list[_Runnable] = []
        self._controllers: list[Controller] = []
        # shared by every controller's queue: a change in progress goes before first reports
        self.priority = PriorityGate()
        self._stop = asyncio.Event()
        self._started = False
        self._synced = False
        self.elector: LeaderElector | None = None
        self._ready_checks: dict[str, Check] = {}
        self._health_checks: dict[str, Check] = {}
        self._sites: list[web.AppRunner] = []
        self.metrics_port: int | None = None
        self.probe_port: int | None = None
        self.leader = asyncio.Event()  # set while this manager runs its leader runnables
        self.serving = asyncio.Event()  # set once the probe and metrics ports are bound
        self._recorders: list[EventRecorder] = []

    # -- composition -------------------------------------------------------

    def informer_for(
        self, kind: GVK | str, name: str | None = None, namespace: str | object | None = _ALL
    ) -> Informer:
        """The shared informer for a kind (in the manager's namespace unless
        given). Informers added after start() are started at once."""
        gvk = as_gvk(kind, name)
        ns = self.options.namespace if namespace is _ALL else namespace
        assert ns is None or isinstance(ns, str)
        key = (gvk, ns)
        if key not in self._informers:
            base = self.options.informer
            selector = self.options.label_selectors.get(gvk, base.label_selector)
            opts = InformerOptions(**{**base.__dict__, "namespace": ns, "label_selector": selector})
            inf = Informer(self.client, gvk, opts)
            self._informers[key] = inf
            self._informers_of.setdefault(gvk, []).append(inf)
            if self._started:
                self._spawn(f"informer {inf.name}", inf.run())
        return self._informers[key]

    def _wrote(self, obj: dict[str, Any]) -> None:
        """Read-your-writes: an object this process wrote is not reconciled from a cache
        that does not show the write yet (`okra_runtime.freshness`)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return
        for inf in self._informers_of.get(GVK.of(api_version, kind), ()):
            inf.wrote(obj)

    def builder(self, name: str) -> Builder:
        return Builder(self, name)

    def add(self, controller: Controller, *, needs_leader: bool = True) -> None:
        self._controllers.append(controller)
        controller.queue.gate = self.priority
        self._runnables.append(
            _Runnable(
                f"controller {controller.name}", controller.run, needs_leader, controller.stop
            )
        )

    def add_runnable(
        self, name: str, start: Callable[[], Awaitable[None]], *, needs_leader: bool = True
    ) -> None:
        """Run `start()` (a long-running coroutine) with the controllers."""
        self._runnables.append(_Runnable(name, start, needs_leader))

    def add_closer(self, name: str, close: Callable[[], Awaitable[None]]) -> None:
        """Await `close()` when the manager stops, on every replica (leader or not): for
        what controllers hold open across reconciles, such as a connection cache."""

        async def held() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                await close()

        self.add_runnable(name, held, needs_leader=False)

    def add_readyz_check(self, name: str, check: Check) -> None:
        self._ready_checks[name] = check

    def add_healthz_check(self, name: str, check: Check) -> None:
        self._health_checks[name] = check

    def event_recorder(self, controller: str) -> EventRecorder:
        rec = EventRecorder(self.client, controller, self.options.identity)
        self._recorders.append(rec)
        return rec

    # -- state ---------------------------------------------------------------

    def readiness(self) -> list[str]:
        """What keeps the manager from being ready (empty when ready)."""
        problems = []
        if not self._started:
            problems.append("manager not started")
        for inf in self._informers.values():
            if not inf.has_synced:
                problems.append(f"informer {inf.name}: not synced")
            elif not inf.healthy:
                problems.append(f"informer {inf.name}: {inf.health_message}")
        for name, check in self._ready_checks.items():
            if (msg := check()) is not None:
                problems.append(f"{name}: {msg}")
        return problems

    def stop(self) -> None:
        self._stop.set()

    # -- running -------------------------------------------------------------

    async def start(self) -> None:
        """Run until stop(), cancellation or lost leadership (raises
        LeadershipLostError)."""
        if self._started:
            raise RuntimeError("a manager can be started once")
        self._tasks: set[asyncio.Task[None]] = set()
        await self._serve()
        self.serving.set()
        self._started = True
        for inf in list(self._informers.values()):
            self._spawn(f"informer {inf.name}", inf.run())
        leader_tasks: list[asyncio.Task[None]] = []
        holder: asyncio.Task[None] | None = None
        stop = asyncio.create_task(self._stop.wait())
        try:
            if not await self._wait_for_sync(stop):
                return
            for r in self._runnables:
                if not r.needs_leader:
                    self._spawn(r.name, r.start())
            if self.options.leader_election:
                o = self.options
                self.elector = LeaderElector(
                    self.client,
                    o.leader_election_id,
                    o.leader_election_namespace,
                    o.identity,
                    o.lease_duration,
                    o.renew_deadline,
                    o.retry_period,
                )
                acquire = asyncio.create_task(self.elector.acquire())
                await asyncio.wait({acquire, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not acquire.done():
                    acquire.cancel()
                    return
                holder = asyncio.create_task(self.elector.hold())
            self.leader.set()
            leader_tasks = [
                self._spawn(r.name, r.start()) for r in self._runnables if r.needs_leader
            ]
            waiters: set[asyncio.Task[bool] | asyncio.Task[None]] = {stop}
            if holder is not None:
                waiters.add(holder)
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if holder is not None and holder.done() and not stop.done():
                for t in leader_tasks:  # leadership lost: stop at once, no grace
                    t.cancel()
                await asyncio.gather(*leader_tasks, return_exceptions=True)
                holder.result()  # raises LeadershipLostError
        finally:
            stop.cancel()
            await self._shutdown(leader_tasks, holder)

    async def run_until_signal(self) -> None:
        """start() with SIGTERM/SIGINT wired to a graceful stop."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            await self.start()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info(
            "signal received; shutting down",
            signal=sig.name,
            deadline=self.options.graceful_shutdown_timeout,
        )
        self.stop()

    def _spawn(self, name: str, coro: Awaitable[None]) -> asyncio.Task[None]:
        async def guarded() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except LeadershipLostError:
                raise
            except Exception:
                log.exception("runnable failed", runnable=name)
                raise

        task = asyncio.create_task(guarded(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _wait_for_sync(self, stop: asyncio.Task[bool]) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.cache_sync_timeout
        while not all(i.has_synced for i in self._informers.values()):
            if stop.done():
                return False
            if loop.time() > deadline:
                pending = [i.name for i in self._informers.values() if not i.has_synced]
                raise TimeoutError(
                    f"caches did not sync within {self.options.cache_sync_timeout}s: {pending}"
                )
            waits = [asyncio.ensure_future(i.wait_for_sync(1.0)) for i in self._informers.values()]
            await asyncio.wait({*waits, stop}, return_when=asyncio.FIRST_COMPLETED, timeout=1.0)
            for w in waits:
                w.cancel()
        self._synced = True
        log.info("caches synced", informers=len(self._informers))
        return True

    async def _shutdown(
        self, leader_tasks: list[asyncio.Task[None]], holder: asyncio.Task[None] | None
    ) -> None:
        # One deadline for the whole grace: the controllers' drain and the runnables' ends
        # share it, and what still runs at it is cancelled (each waited a grace of its own,
        # so an in-flight reconcile retrying an unreachable AWS could hold a stop for twice
        # the grace)
        deadline = asyncio.get_running_loop().time() + self.options.graceful_shutdown_timeout
        stops = [r.stop() for r in self._runnables if r.stop is not None]
        if stops:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await asyncio.gather(*stops, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(deadline):
                await asyncio.gather(*leader_tasks, return_exceptions=True)
        for t in leader_tasks:
            t.cancel()
        await asyncio.gather(*leader_tasks, return_exceptions=True)
        for rec in self._recorders:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await rec.flush()
        if holder is not None:
            holder.cancel()
            await asyncio.gather(holder, return_exceptions=True)
        if self.elector is not None:
            await self.elector.release()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for runner in self._sites:
            await runner.cleanup()
        self._sites.clear()
        self.leader.clear()
        log.info("manager stopped")

    # -- HTTP ------------------------------------------------------------------

    async def _serve(self) -> None:
        if self.options.metrics_address:
            app = web.Application()
            app.router.add_get("/metrics", self._metrics)
            self.metrics_port = await self._listen(app, self.options.metrics_address)
        if self.options.probe_address:
            app = web.Application()
            app.router.add_get("/healthz", self._healthz)
            app.router.add_get("/readyz", self._readyz)
            self.probe_port = await self._listen(app, self.options.probe_address)

    async def _listen(self, app: web.Application, address: str) -> int:
        host, _, port = address.rpartition(":")
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host or "0.0.0.0", int(port))
        await site.start()
        self._sites.append(runner)
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        return int(sockets[0].getsockname()[1]) if sockets else int(port)

    async def _metrics(self, _req: web.Request) -> web.Response:
        for ctrl in self._controllers:
            ctrl.queue.update_unfinished_work()
        body = generate_latest(REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, _req: web.Request) -> web.Response:
        problems = [
            f"{n}: {msg}" for n, c in self._health_checks.items() if (msg := c()) is not None
        ]
        if problems:
            return web.Response(status=503, text="\n".join(problems) + "\n")
        return web.Response(text="ok\n")

    async def _readyz(self, _req: web.Request) -> web.Response:
        problems = self.readiness()
        if problems:
            return web.Response(status=503, text="\n".join(problems) + "\n")
        return web.Response(text="ok\n")
