"""`--leader-elect` through an API server outage longer than the lease.

Two okra-managers with leader election: the leader (a) reaches kube-apiserver through a
TCP proxy, the standby (b) directly; each has its own AWS proxy, so every AWS write is
attributed. The proxy partitions a from the server (connections hang, nothing is refused)
for longer than the lease (8 s here, with --leader-elect-lease-duration): a cannot renew,
so at the renew deadline (5 s) it stops (a renewal hanging on a dead connection is
abandoned there) and exits non-zero, as
controller-runtime's managers do; b takes the expired lease and carries the rollout on.
a is restarted (as a kubelet would) once the server is back and stands by; b is then
stopped with SIGTERM (a rolling update) and the restarted a takes over and finishes.

Holds: a exits with a non-zero code, and stopped leading before b started (never two
leaders); b leads within the lease (+ slack) of a's last renewal; no AWS write of a after
b's first; one rollout id, one Pause per pause step; weights never regress; the rollout
completes. Printed: when a exited, when b took over, when the restarted a took over.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

import pytest

from e2e.conftest import PAUSE, RUN, cell_obj, promote, wait_status
from tcpproxy import StallingProxy

from .harness import (
    LEADER_ELECT,
    LEASE,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    WRITES,
    Sampler,
    World,
    rollout_ids,
    via,
)

OUTAGE = LEASE + 6  # > lease duration > renew deadline


@pytest.mark.timeout(600)
async def test_a_leader_cut_off_longer_than_its_lease_exits_and_the_rollout_goes_on(
    world: World,
) -> None:
    env, c, ns, control_plane = world.env, world.client, world.ns, world.cp
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    tcp = StallingProxy(host, int(port))
    await tcp.start()
    leader_elect = LEADER_ELECT
    try:
        async with world.aws_proxy() as pa, world.aws_proxy() as pb, Sampler(env) as sampler:
            kubeconfig = via(control_plane, tcp, world.tmp / "a-via.kubeconfig")
            a = world.manager("a", aws=pa, kubeconfig=kubeconfig, args=leader_elect)
            b = world.manager("b", aws=pb, args=leader_elect)
            try:
                a.start()
                assert await a.says("became leader")
                b.start()
                await sampler.target_group("web-a-v1", "v1")
                steps: list[dict[str, Any]] = [
                    {"setWeight": 20},
                    {"pause": {}},
                    {"setWeight": 50},
                    {"pause": {}},
                    {"setWeight": 80},
                ]
                await c.create(cell_obj(ns, env.alb.listener_arn, steps))
                await wait_status(c, ns, lambda s: s.get("health") == "Healthy")
                await sampler.target_group("web-a-v2", "v2")
                before = await wait_status(
                    c, ns, lambda s: s.get("currentStepIndex") == 1 and s["health"] == "Paused"
                )
                assert await b.says("waiting for leadership")
                assert a.said("became leader")
                assert not b.said("became leader")

                tcp.stall()  # a network partition: connections hang, nothing is refused
                cut, cut_wall = time.monotonic(), datetime.datetime.now(datetime.UTC)
                await promote(c, ns)  # seen only by whoever leads next
                assert await b.says("became leader")
                b_leads = time.monotonic() - cut
                assert a.proc is not None
                rc = await asyncio.to_thread(a.proc.wait, 60)
                a_exited = time.monotonic() - cut
                after = await wait_status(c, ns, lambda s: s.get("currentStepIndex") == 3)
                await asyncio.sleep(max(0.0, OUTAGE - (time.monotonic() - cut)))
                tcp.resume()
                a.log.rename(world.tmp / "a-first.log")
                a.start()  # restarted, as a kubelet would; it stands by
                assert await a.says("waiting for leadership")
                assert not a.said("became leader")
                assert b.proc is not None
                b.proc.terminate()
                terminated = time.monotonic()
                assert await a.says("became leader", interval=0.05)
                a_leads = time.monotonic() - terminated
                await promote(c, ns)
                await wait_status(
                    c, ns, lambda s: s.get("health") == "Healthy" and s["stableVersion"] == "v2"
                )
            finally:
                a.stop()
                b.stop()
    finally:
        await tcp.close()

    first_log = (world.tmp / "a-first.log").read_text()
    a.log = world.tmp / "a-first.log"
    a_lost, b_took_over = a.logged_at("lost leadership"), b.logged_at("became leader")
    a_writes = [t for t, op in pa.calls if op in WRITES]
    b_writes = [t for t, op in pb.calls if op in WRITES]
    runs = [r["metadata"]["name"] for r in (await c.list(RUN, ns)).items]
    pauses = [p["metadata"]["name"] for p in (await c.list(PAUSE, ns)).items]
    shares = sampler.shares("v2")
    print(
        f"\nAPI server partitioned from the leader for {OUTAGE:.0f} s (lease {LEASE:g} s, renew "
        f"deadline {RENEW_DEADLINE:g} s): it stopped leading "
        f"{(a_lost - cut_wall).total_seconds():.1f}s into it and "
        f"exited with code {rc} (seen {a_exited:.1f}s into it); the standby led "
        f"{b_leads:.1f}s into it and moved the rollout from step {before['currentStepIndex']} "
        f"to {after['currentStepIndex']} ({(b_took_over - a_lost).total_seconds():.1f}s after a "
        f"stopped leading); the restarted manager led {a_leads:.2f}s after the "
        f"standby's SIGTERM. AWS writes: a {len(a_writes)}, b {len(b_writes)}; pauses "
        f"{sorted(pauses)}; v2 share {shares}"
    )
    assert rc != 0
    assert "leadership lost; exiting" in first_log
    # The cut-off leader stopped before the standby took over (both clocks are this
    # machine's): never two leaders.
    assert a_lost < b_took_over, (a_lost, b_took_over)
    assert b_leads <= LEASE + 2 * RETRY_PERIOD + 10  # the lease + two retry periods, with slack
    # The cut-off leader wrote nothing to AWS once the standby had started writing.
    first_b = min(b_writes)
    assert all(t < first_b for t in a_writes if t < terminated)
    assert after["rolloutId"] == before["rolloutId"]
    assert len(rollout_ids(runs + pauses, "v2")) == 1
    assert len(pauses) == 2, pauses
    assert sampler.totals == {100}
    assert shares == sorted(shares)
    assert await env.rule_weights() == {"web-a-v2": 100}
