"""`okra get progressiverollout`, `promote`, `pause`, `resume`, `abort` as a process against a
real kube-apiserver, with the controller running and Argo CD's part played on the
Applications (see harness.py)."""

from __future__ import annotations

import asyncio
import re
import signal
from typing import Any

import yaml

from integration.progressiverollout.harness import NEW, OLD, argo, manager
from integration.progressiverollout.test_controller import phase_is, rollout, status_of
from integration.test_cli import cli_env, command, okra, read_until
from okra_controllers.api.kinds import APPLICATION
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from support import eventually


async def test_get_shows_stages_and_clusters_and_promote_ends_the_bake(
    world: dict[str, Any], rt_client: Client, namespace: str, control_plane: ControlPlane
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        pr = rollout(namespace)
        pr["spec"]["stages"][0]["bakeTime"] = "1h"
        await rt_client.create(pr)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        await argocd.commit(NEW)

        async def baking() -> bool:
            st = await status_of(rt_client, namespace)
            clusters = (st.get("stages") or [{}])[0].get("clusters") or []
            return len(clusters) == 2 and all(c["phase"] == "Baking" for c in clusters)

        assert await eventually(baking, 60)
        code, out, err = await okra(control_plane, namespace, "get", "progressiverollout", "web")
        assert code == 0, err
        assert "Stage 1: canary in EMEA  [Progressing]" in out
        assert "Stage 2: eu-west-1  [Pending]" in out
        assert "Baking" in out
        assert NEW[:12] in out
        assert "Healthy" in out
        left = [int(n) for n in re.findall(r"Healthy\s+(\d+)s", out)]  # bake time left
        assert len(left) == 2, out
        assert all(3000 < n <= 3600 for n in left), out

        code, out, err = await okra(control_plane, namespace, "promote", "web")
        assert code == 0, err
        assert "progressiverollout web: promoted" in out
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 90)

        # pause holds the next revision; resume lets it go.
        code, out, err = await okra(control_plane, namespace, "pause", "web")
        assert code == 0, err
        synced = len(argocd.synced)
        await argocd.commit(OLD)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Paused"), 30)
        assert len(argocd.synced) == synced
        code, out, err = await okra(control_plane, namespace, "resume", "web")
        assert code == 0, err

        async def syncing_again() -> bool:
            return len(argocd.synced) > synced

        assert await eventually(syncing_again, 60)  # stage 1 again (then bakes for an hour)
        assert (await status_of(rt_client, namespace))["phase"] == "Progressing"


async def test_abort_with_rollback_policy_rolls_back(
    world: dict[str, Any], rt_client: Client, namespace: str, control_plane: ControlPlane
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        pr = rollout(namespace, failurePolicy="Rollback")
        pr["spec"]["stages"][0]["bakeTime"] = "1h"
        await rt_client.create(pr)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        await argocd.commit(NEW)

        async def synced_two() -> bool:
            return len(argocd.synced) == 2

        assert await eventually(synced_two, 60)
        code, out, err = await okra(control_plane, namespace, "abort", "web")
        assert code == 0, err
        assert "synced back to their previous revision" in out
        assert await eventually(lambda: phase_is(rt_client, namespace, "RolledBack"), 60)
        for app in (await rt_client.list(APPLICATION, namespace)).items:
            assert app["status"]["history"][-1]["revision"] == OLD
    # The record the controller wrote: the first revision completed, the aborted one ended
    # once its rollback was done, with its stages and clusters.
    code, out, err = await okra(control_plane, namespace, "history", "progressiverollout", "web")
    assert (code, err) == (0, ""), err
    head, *rows = out.splitlines()
    assert head.split()[:4] == ["REVISION", "STARTED", "TOOK", "OUTCOME"]
    assert [(r.split()[0], r.split()[4]) for r in rows] == [(NEW, "Aborted"), (OLD, "Completed")]
    code, out, err = await okra(
        control_plane, namespace, "history", "prollout", "web", NEW[:8], "-o", "yaml"
    )
    assert code == 0, err
    record = yaml.safe_load(out)
    assert (record["revision"], record["outcome"]) == (NEW, "Aborted")
    canary = record["stages"][0]
    assert {c["phase"] for c in canary["clusters"]} == {"RolledBack"}, canary
    code, out, err = await okra(control_plane, namespace, "history", "prollout", "web", NEW[:8])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"progressiverollout web: revision {NEW}, Aborted, ")
    assert any(f"stage {canary['name']} began" in line for line in lines), out
    assert lines[-1].split("  ")[-1].startswith("Aborted: "), out


async def test_unknown_name_is_a_clear_error(
    world: dict[str, Any], namespace: str, control_plane: ControlPlane
) -> None:
    code, _, err = await okra(control_plane, namespace, "get", "progressiverollout", "nope")
    assert code == 1
    assert f"progressiverollout nope not found in namespace {namespace}" in err


async def test_watch_prints_a_new_frame_when_the_rollout_moves_and_stops_on_sigint(
    world: dict[str, Any], rt_client: Client, namespace: str, control_plane: ControlPlane
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(rollout(namespace))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        proc = await asyncio.create_subprocess_exec(
            *command(control_plane, namespace, "get", "progressiverollout", "web", "--watch"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=cli_env(),
        )
        assert proc.stdout is not None
        buf = bytearray()
        try:
            await read_until(proc.stdout, buf, OLD[:12].encode())
            await argocd.commit(NEW)
            await read_until(proc.stdout, buf, b"Revision:      " + NEW[:12].encode())
            proc.send_signal(signal.SIGINT)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode == 0, err.decode()
        assert b"---\n" in buf  # frames separated when not on a terminal
