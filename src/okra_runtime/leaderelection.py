"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules.

A candidate takes the Lease when it is free (no holder) or when the holder has
not renewed it for `lease_duration`, measured on the candidate's own clock
from the moment it last saw the record change (so clock skew between nodes
does not matter). The leader renews every `retry_period`; if it cannot renew
for `renew_deadline` it has lost leadership and must stop at once. Releasing
on clean shutdown clears the holder, so a standby takes over immediately
instead of waiting out the lease: between attempts a candidate watches the Lease
(from the resourceVersion it last read) as well as waiting `retry_period`, so a
release wakes it at once rather than at its next poll.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import structlog

from okra_runtime.client import Client
from okra_runtime.errors import ApiError, NotFoundError
from okra_runtime.gvk import GVK
from okra_runtime.metrics import LEADER
from okra_runtime.timeutil import micro_time

LEASE = GVK("coordination.k8s.io", "v1", "Lease")
log = structlog.get_logger("okra_runtime.leaderelection")


class LeadershipLostError(Exception):
    """The lease could not be renewed within the renew deadline."""


@dataclass
class LeaderElector:
    client: Client
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    _observed: dict[str, Any] | None = field(default=None, init=False)
    _observed_at: float = field(default=0.0, init=False)
    _is_leader: bool = field(default=False, init=False)
    _rv: str = field(default="", init=False)

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        LEADER.labels(self.name).set(0)

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    def _set_leader(self, leading: bool) -> None:
        self._is_leader = leading
        LEADER.labels(self.name).set(1 if leading else 0)

    async def acquire(self) -> None:
        """Return once this candidate holds the lease."""
        log.info(
            "waiting for leadership", lease=f"{self.namespace}/{self.name}", identity=self.identity
        )
        while not await self._try_acquire_or_renew():
            await self._lease_changed(self.retry_period * (1 + 0.2 * random.random()))
        self._set_leader(True)
        log.info("became leader", lease=f"{self.namespace}/{self.name}", identity=self.identity)

    async def _lease_changed(self, period: float) -> None:
        """Return when the Lease changes after the version last read, or after
        `period` seconds (also on any error: the caller simply tries again)."""
        if not self._rv:
            await asyncio.sleep(period)
            return
        started = time.monotonic()
        try:
            async with asyncio.timeout(period):
                async for event in self.client.watch(
                    LEASE,
                    self.namespace,
                    resource_version=self._rv,
                    field_selector=f"metadata.name={self.name}",
                    timeout_seconds=int(period) + 1,
                ):
                    if event.get("type") != "BOOKMARK":
                        return
        except TimeoutError:
            return
        except Exception as e:  # any failure: wait out the period, then try again
            log.debug("lease watch failed", error=str(e))
        await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))

    async def hold(self) -> None:
        """Renew until renewal fails for `renew_deadline`; then raise
        LeadershipLostError. Cancel it to stop renewing."""
        while True:
            await asyncio.sleep(self.retry_period)
            deadline = time.monotonic() + self.renew_deadline
            while not await self._renew_until(deadline):
                if time.monotonic() >= deadline:
                    self._set_leader(False)
                    log.error("lost leadership", lease=f"{self.namespace}/{self.name}")
                    raise LeadershipLostError(
                        f"could not renew lease {self.namespace}/{self.name} "
                        f"within {self.renew_deadline}s"
                    )
                await asyncio.sleep(min(self.retry_period, max(0.0, deadline - time.monotonic())))

    async def _renew_until(self, deadline: float) -> bool:
        """One renewal, abandoned at `deadline`: a request hanging on a dead connection
        (a partition, not a refusal) would otherwise keep this candidate leading past the
        lease, while a standby takes it over (client-go bounds it the same way)."""
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            log.debug("lease renewal timed out", lease=f"{self.namespace}/{self.name}")
            return False

    async def release(self) -> None:
        """Give the lease up (holder cleared) if we hold it."""
        if not self._is_leader:
            return
        self._set_leader(False)
        try:
            lease = await self.client.get(LEASE, self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = micro_time()
            lease["spec"] = {
                **spec,
                "holderIdentity": None,
                "leaseDurationSeconds": 1,
                "renewTime": now,
                "acquireTime": now,
            }
            await self.client.update(lease)
            log.info("released leadership", lease=f"{self.namespace}/{self.name}")
        except (ApiError, ConnectionError) as e:
            log.warning("could not release lease", error=str(e))

    async def _try_acquire_or_renew(self) -> bool:
        now_wall = micro_time()
        try:
            lease = await self.client.get(LEASE, self.name, self.namespace)
        except NotFoundError:
            try:
                await self.client.create(
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": {
                            "holderIdentity": self.identity,
                            "leaseDurationSeconds": int(self.lease_duration),
                            "acquireTime": now_wall,
                            "renewTime": now_wall,
                            "leaseTransitions": 0,
                        },
                    }
                )
                return True
            except (ApiError, ConnectionError):
                return False
        except (ApiError, ConnectionError) as e:
            log.debug("lease read failed", error=str(e))
            return False
        self._rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")
        spec = lease.get("spec") or {}
        record = {k: spec.get(k) for k in ("holderIdentity", "renewTime", "leaseTransitions")}
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        holder = spec.get("holderIdentity")
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        unchanged = time.monotonic() - self._observed_at
        if holder and holder != self.identity and unchanged < duration:
            return False  # someone else holds a live lease
        if holder and holder != self.identity:
            # Why a standby takes over, for the incident after: its holder's last renewal
            # (the holder's clock) and how long this candidate saw the record unchanged
            log.info(
                "lease expired; taking over",
                lease=f"{self.namespace}/{self.name}",
                holder=holder,
                renewed=spec.get("renewTime"),
                unchanged_for=round(unchanged, 2),
            )
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "renewTime": now_wall,
        }
        if holder != self.identity:
            new_spec["acquireTime"] = now_wall
            new_spec["leaseTransitions"] = transitions + 1
        lease["spec"] = new_spec
        try:
            await self.client.update(lease)
        except (ApiError, ConnectionError) as e:
            log.debug("lease write failed", error=str(e))
            return False
        self._observed = {
            k: new_spec.get(k) for k in ("holderIdentity", "renewTime", "leaseTransitions")
        }
        self._observed_at = time.monotonic()
        return True
