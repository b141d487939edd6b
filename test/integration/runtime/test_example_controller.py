"""The example controller (examples/echo_controller.py), run as users run it:
as a process. It does its job, and two replicas elect one leader, fail over
after a SIGKILL only once the dead leader's lease ran out, and release it on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from okra_runtime import GVK, Client, NotFoundError
from okra_testkit.envtest import ControlPlane
from support import eventually, wait_events

REPO = Path(__file__).resolve().parents[3]
CM = GVK("", "v1", "ConfigMap")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")
LEASE_DURATION, RENEW_DEADLINE, RETRY = 4.0, 3.0, 0.5


@contextmanager
def echo(
    cp: ControlPlane, namespace: str, log: Path, *extra: str
) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(REPO / "examples" / "echo_controller.py"),
                "--kubeconfig",
                str(cp.kubeconfig()),
                "--namespace",
                namespace,
                "--log-format",
                "json",
                *extra,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def reconciled(log: Path) -> set[str]:
    names = set()
    for line in log.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("event") == "reconciled":
            names.add(rec["name"])
    return names


def parent(name: str, ns: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"echo.example.dev/enabled": "true"}},
        "data": data,
    }


async def child_data(c: Client, name: str, ns: str) -> dict[str, str] | None:
    try:
        return (await c.get(CM, f"{name}-echo", ns)).get("data")
    except NotFoundError:
        return None


async def test_echo_controller_keeps_children_in_step(
    control_plane: ControlPlane, rt_client: Client, namespace: str, tmp_path: Path
) -> None:
    with echo(control_plane, namespace, tmp_path / "echo.log"):
        p = await rt_client.create(parent("web", namespace, color="blue"))
        assert await eventually(
            lambda: _eq(child_data(rt_client, "web", namespace), {"color": "blue"}), within=30
        )
        child = await rt_client.get(CM, "web-echo", namespace)
        assert child["metadata"]["ownerReferences"][0]["uid"] == p["metadata"]["uid"]

        child["data"] = {"color": "tampered"}  # the child is put back
        await rt_client.update(child)
        assert await eventually(
            lambda: _eq(child_data(rt_client, "web", namespace), {"color": "blue"}), within=30
        )
        await rt_client.patch(CM, "web", {"data": {"color": "green"}}, namespace=namespace)
        assert await eventually(
            lambda: _eq(child_data(rt_client, "web", namespace), {"color": "green"}), within=30
        )
        await rt_client.delete(CM, "web-echo", namespace)  # recreated
        assert await eventually(
            lambda: _eq(child_data(rt_client, "web", namespace), {"color": "green"}), within=30
        )
        await wait_events(rt_client, namespace, "EchoCreated")

        await rt_client.create(
            {**parent("plain", namespace), "metadata": {"name": "plain", "namespace": namespace}}
        )  # not labelled: ignored
        await rt_client.delete(CM, "web", namespace)  # the garbage collector takes the child
        assert await eventually(
            lambda: _eq(child_data(rt_client, "web", namespace), None), within=60
        )
        assert await child_data(rt_client, "plain", namespace) is None


async def test_leader_election_failover_and_release(
    control_plane: ControlPlane, rt_client: Client, namespace: str, tmp_path: Path
) -> None:
    le = [
        "--leader-elect",
        "--leader-election-namespace",
        namespace,
        "--lease-duration",
        str(LEASE_DURATION),
        "--renew-deadline",
        str(RENEW_DEADLINE),
        "--retry-period",
        str(RETRY),
    ]

    async def holder() -> str | None:
        try:
            lease = await rt_client.get(LEASE, "echo-controller", namespace)
        except NotFoundError:
            return None
        return (lease.get("spec") or {}).get("holderIdentity")

    logs = {n: tmp_path / f"{n}.log" for n in "abc"}
    with echo(control_plane, namespace, logs["a"], *le, "--identity", "a") as a:
        assert await eventually(lambda: _eq(holder(), "a"), within=30)
        with echo(control_plane, namespace, logs["b"], *le, "--identity", "b") as b:
            for i in range(3):
                await rt_client.create(parent(f"p{i}", namespace, i=str(i)))

            async def all_children() -> bool:
                return all([await child_data(rt_client, f"p{i}", namespace) for i in range(3)])

            assert await eventually(all_children, within=30)
            await asyncio.sleep(2 * RETRY)  # give the standby every chance to misbehave
            assert {"p0", "p1", "p2"} <= reconciled(logs["a"])
            assert reconciled(logs["b"]) == set(), "the standby must not reconcile"

            a.send_signal(signal.SIGKILL)
            assert await asyncio.to_thread(a.wait, 30) == -signal.SIGKILL
            last_renew = _micro(
                (await rt_client.get(LEASE, "echo-controller", namespace)).get("spec")
            )
            assert await eventually(lambda: _eq(holder(), "b"), within=30)
            taken = (await rt_client.get(LEASE, "echo-controller", namespace))["spec"]
            # no split brain: the standby waited out the dead leader's whole lease
            assert _micro(taken, "acquireTime") >= last_renew + LEASE_DURATION - 0.001, taken
            await rt_client.create(parent("p3", namespace, i="3"))
            assert await eventually(
                lambda: _ne(child_data(rt_client, "p3", namespace), None), within=30
            )
            # the reconcile logs after its create is answered: the child may be seen first
            assert await eventually(lambda: _true("p3" in reconciled(logs["b"])), within=10)

            b.send_signal(signal.SIGTERM)  # clean shutdown releases the lease
            assert await asyncio.to_thread(b.wait, 30) == 0
            assert await holder() in (None, ""), "SIGTERM must release the lease"
            with echo(control_plane, namespace, logs["c"], *le, "--identity", "c"):
                assert await eventually(lambda: _eq(holder(), "c"), within=30)


def _micro(spec: object, key: str = "renewTime") -> float:
    """A Lease MicroTime field as epoch seconds."""
    assert isinstance(spec, dict), spec
    return datetime.fromisoformat(str(spec[key]).replace("Z", "+00:00")).timestamp()


async def _eq(value: Awaitable[object], expected: object) -> bool:
    return (await value) == expected


async def _ne(value: Awaitable[object], unexpected: object) -> bool:
    return (await value) != unexpected


async def _true(value: bool) -> bool:
    return value
