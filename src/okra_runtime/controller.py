"""A controller: a workqueue of Requests and N workers calling a reconciler.

Guarantees: one Request is never reconciled by two workers at once (the
queue's processing set); an exception never escapes a worker, it is logged
with the object's key and the reconcile id, counted, and the Request is
requeued with per-item exponential backoff; one that is a programming error (a
None dereferenced, a missing key, a wrong type: `errors.panicked`) is also counted in
`controller_runtime_reconcile_panics_total`, as controller-runtime counts a recovered
panic, and retried like any other. A server that cannot be reached or
answers 5xx/429 is retried on a backoff of its own capped at `unreachable_max_delay`
(1 s), logged as a warning without traceback, so that work resumes within about a
second of an outage ending, and an ordinary error right after the outage starts
its backoff afresh instead of where the outage's retries left the count (5 ms *
2^retries: minutes); a `TerminalError` is counted and
not retried; `Result(requeue_after=s)` forgets the backoff and comes back in
s seconds. Metric names are controller-runtime's.

A `ReportedError` (a failure the reconciler has already explained in the object's
status and an Event, such as bad input) is counted like any error but logged as
one warning without a traceback on the first failure and at debug level on the
retries, and retried on a per-item backoff of its own (`reported_base_delay`
doubling to `reported_max_delay`) that never draws on the queue's shared retry
bucket: a thousand objects that keep failing cannot push back the retries of the
healthy ones, which is what a shared 10 qps bucket in debt does.

Requests whose last reconcile succeeded are served before the others (the queue's `first`
lane): new objects, and objects whose last reconcile failed, wait behind the next step of
objects that work. A thousand broken or new objects created at once then cost a working
object's rollout at most one reconcile's wait per step, not a place at the end of the
line; among themselves they keep their order, and they are never starved: after four
working objects in a row, one of them is served. The memory of successes is bounded
(`SUCCEEDED_KEPT`; past it, it starts over). A new object that another controller made (it
has a controlling owner reference: a Cell's AnalysisRun or Pause) is in the first lane until
its first reconcile: it is a step of its owner's change, not one of the flood.

Read-your-writes: a Request is not reconciled from a cache that does not yet show what this
process last wrote to its object (`okra_runtime.freshness`; the builder hands the primary
informer's floors to the controller). The worker waits for the watch to deliver, up to
`fresh_timeout`; if it has not by then, the Request is put back for later (a watch that
slow is being restarted by its informer) and nothing is decided from the older object.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Hashable

import structlog

from okra_runtime import metrics as m
from okra_runtime.errors import panicked, unreachable
from okra_runtime.freshness import Floors
from okra_runtime.logging import ContextBinder
from okra_runtime.reconcile import (
    ReconcileFunc,
    Reconciler,
    ReportedError,
    Request,
    Result,
    TerminalError,
)
from okra_runtime.workqueue import (
    ItemExponentialFailureRateLimiter,
    RateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)

log = structlog.get_logger("okra_runtime.controller")
SUCCEEDED_KEPT = 65536
"""Requests remembered as having last succeeded, per controller."""
_LOG_CONTEXT = ContextBinder("controller", "namespace", "name", "reconcile_id")


class Controller:
    def __init__(
        self,
        name: str,
        reconciler: Reconciler | ReconcileFunc,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter[Hashable] | None = None,
        unreachable_max_delay: float = 1.0,
        reported_base_delay: float = 1.0,
        reported_max_delay: float = 300.0,
        floors: Floors | None = None,
        fresh_timeout: float = 5.0,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        self.name = name
        self._reconcile: ReconcileFunc = (
            reconciler.reconcile if isinstance(reconciler, Reconciler) else reconciler
        )
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.unreachable_max_delay = unreachable_max_delay
        self.reported_base_delay = reported_base_delay
        # read-your-writes: the primary informer's floors (None: reconcile what is cached)
        self.floors = floors
        self.fresh_timeout = fresh_timeout
        # the Requests whose last reconcile succeeded: queued ahead of new and failing ones
        self._succeeded: set[Request] = set()
        # the Requests whose last reconcile said the object is mid-change (`in_progress`)
        self._in_progress: set[Request] = set()
        # new objects another controller made (a Cell's AnalysisRun): part of a change in
        # progress, so in the first lane until their first reconcile
        self._made: set[Request] = set()
        self.queue: WorkQueue[Request] = WorkQueue(
            name,
            rate_limiter or default_controller_rate_limiter(),
            first=self._first,
        )
        self._stopping = False
        # the backoff of failures to reach a server, per item and apart from the queue's
        # own: an outage's many quick retries must not leave an ordinary error that follows
        # it (a conflict on a stale object, say) with a backoff grown to minutes
        self._unreachable: ItemExponentialFailureRateLimiter[Request] = (
            ItemExponentialFailureRateLimiter(0.005, unreachable_max_delay)
        )
        # the backoff of `ReportedError`s, per item, apart from the queue's shared bucket
        self._reported: ItemExponentialFailureRateLimiter[Request] = (
            ItemExponentialFailureRateLimiter(reported_base_delay, reported_max_delay)
        )
        # label-bound metric children, once: `.labels()` per reconcile is a dict lookup
        # under a lock, for every event
        self._m_time = m.RECONCILE_TIME.labels(name)
        self._m_success = m.RECONCILE_TOTAL.labels(name, "success")
        self._m_requeue_after = m.RECONCILE_TOTAL.labels(name, "requeue_after")
        self._m_panics = m.RECONCILE_PANICS.labels(name)

    async def stop(self) -> None:
        """Stop handing out work and wait until in-flight reconciles finish.
        Queued Requests are dropped: their objects are reconciled again by
        whoever runs next, from the API server's state."""
        self._stopping = True
        await self.queue.shutdown_with_drain()

    def enqueue(self, request: Request) -> None:
        self.queue.add(request)

    def made(self, request: Request) -> None:
        """`request` names a new object another controller made (its controlling owner):
        served in the first lane until its first reconcile, as a step of that owner's change,
        not behind a flood of objects users created."""
        if len(self._made) < SUCCEEDED_KEPT:
            self._made.add(request)

    def _first(self, request: Request) -> bool:
        return request in self._succeeded or request in self._made

    async def run(self) -> None:
        """Run workers until cancelled; on cancel, stop taking work and let
        in-flight reconciles finish (the manager bounds that with a deadline)."""
        m.MAX_CONCURRENT_RECONCILES.labels(self.name).set(self.max_concurrent_reconciles)
        # Every label set from 0, as controller-runtime does: a counter that first appears
        # at 1 has no increase() or rate() in Prometheus, so the first error would not alert.
        for result in ("success", "error", "requeue", "requeue_after"):
            m.RECONCILE_TOTAL.labels(self.name, result)
        for counter in (m.RECONCILE_ERRORS, m.TERMINAL_RECONCILE_ERRORS, m.RECONCILE_PANICS):
            counter.labels(self.name)
        workers = [
            asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
            for i in range(self.max_concurrent_reconciles)
        ]
        log.info("controller started", controller=self.name, workers=self.max_concurrent_reconciles)
        try:
            await asyncio.gather(*workers)
        finally:
            self.queue.shutdown()
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _worker(self) -> None:
        active = m.ACTIVE_WORKERS.labels(self.name)
        while True:
            try:
                req = await self.queue.get()
            except ShutDown:
                return
            if self._stopping:
                self.queue.done(req)
                return
            active.inc()
            try:
                await self._process(req)
            finally:
                active.dec()
                self.queue.done(req)

    async def _fresh(self, req: Request) -> bool:
        """Whether the cache shows `req`'s object at least as new as this process last
        wrote it, waiting up to `fresh_timeout` for the watch to deliver; when it does not,
        the Request is put back (not an error: nothing was tried)."""
        floors = self.floors
        if floors is None or floors.fresh(req.key):
            return True
        m.STALE_CACHE_WAITS.labels(self.name).inc()
        if await floors.wait(req.key, self.fresh_timeout):
            return True
        log.debug("cache still older than our last write; later", controller=self.name, key=req.key)
        self.queue.add_after(req, self.fresh_timeout)
        return False

    # Long on purpose: controller-runtime's processNextWorkItem: one reconcile, its metrics,
    # logs and requeue decision, in order.
    async def _process(self, req: Request) -> None:
        if not await self._fresh(req):
            return
        reconcile_id = f"{random.getrandbits(48):012x}"  # as uuid4().hex[:12], no syscall
        with _LOG_CONTEXT(self.name, req.namespace, req.name, reconcile_id):
            start = time.perf_counter()
            gate = self.queue.gate
            was = req in self._in_progress
            if was and gate is not None:
                gate.progress_started()
            still = False
            next_hop: float | None = None
            try:
                result = await self._reconcile(req) or Result()
                still = result.in_progress
                next_hop = result.requeue_after if still else None
            except asyncio.CancelledError:
                self.queue.add(req)  # not finished: whoever runs next must see it
                raise
            except TerminalError as e:
                self._succeeded.discard(req)
                m.RECONCILE_TOTAL.labels(self.name, "error").inc()
                m.RECONCILE_ERRORS.labels(self.name).inc()
                m.TERMINAL_RECONCILE_ERRORS.labels(self.name).inc()
                log.error("reconcile failed terminally; not retrying", error=str(e))
                self.queue.forget(req)
                return
            except ReportedError as e:
                self._succeeded.discard(req)
                self._reported_failure(req, e)
                return
            except Exception as e:
                self._succeeded.discard(req)
                m.RECONCILE_TOTAL.labels(self.name, "error").inc()
                m.RECONCILE_ERRORS.labels(self.name).inc()
                if unreachable(e):
                    retries = self._unreachable.num_requeues(req)
                    (log.warning if retries == 0 else log.debug)(
                        "reconcile interrupted: a server is unreachable; will retry",
                        error=f"{type(e).__name__}: {e}",
                        retries=retries,
                    )
                    delay = self._unreachable.when(req)
                    self.queue.add_after(req, delay * (0.5 + random.random() / 2))
                    return
                self._unreachable.forget(req)  # reached: a new kind of failure
                if panicked(e):  # a bug: counted as controller-runtime counts a panic
                    self._m_panics.inc()
                log.error(
                    "reconcile failed; will retry",
                    error=f"{type(e).__name__}: {e}",
                    retries=self.queue.num_requeues(req),
                    exc_info=True,
                )
                self.queue.add_rate_limited(req)
                return
            finally:
                self._m_time.observe(time.perf_counter() - start)
                self._made.discard(req)
                if still:
                    self._in_progress.add(req)
                elif was:
                    self._in_progress.discard(req)
                if gate is not None and (was or still):
                    if was:
                        gate.progress_finished(still, next_hop)
                    else:
                        gate.touched(still, next_hop)
            if len(self._succeeded) >= SUCCEEDED_KEPT:
                self._succeeded.clear()
            self._succeeded.add(req)
            if result.requeue_after is not None and result.requeue_after > 0:
                self.queue.forget(req)
                self.queue.add_after(req, result.requeue_after)
                self._m_requeue_after.inc()
            elif result.requeue:
                self.queue.add_rate_limited(req)
                m.RECONCILE_TOTAL.labels(self.name, "requeue").inc()
            else:
                self.queue.forget(req)
                self._m_success.inc()
            if self._reported.num_requeues(req):
                self._reported.forget(req)
            self._unreachable.forget(req)

    def _reported_failure(self, req: Request, e: ReportedError) -> None:
        """Count it, say it once (the object's status already does), retry it later."""
        m.RECONCILE_TOTAL.labels(self.name, "error").inc()
        m.RECONCILE_ERRORS.labels(self.name).inc()
        retries = self._reported.num_requeues(req)
        (log.warning if retries == 0 else log.debug)(
            "reconcile failed; reported in the object's status; will retry",
            error=f"{type(e).__name__}: {e}",
            retries=retries,
        )
        self.queue.add_after(req, self._reported.when(req) * (0.5 + random.random() / 2))
