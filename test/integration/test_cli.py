"""The `okra` CLI as a process against a real kube-apiserver.

No controller runs here: each test writes a Cell mid-rollout directly (spec,
then status through the status subresource), with its AWSTargetGroups, load
balancer config, Pause, AnalysisRuns and VersionBlocklist, runs
`python -m okra_controllers.cli`, and checks what it printed and what it
changed in the API server (annotations, the Pause, the blocklist, spec.version).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from okra_controllers.api.kinds import ANALYSIS_RUN, BLOCKLIST, CELL, PAUSE
from okra_controllers.api.v1alpha1.history import RolloutRecord
from okra_runtime import GVK, Client, NotFoundError
from okra_testkit.envtest import ADMIN, UNPRIVILEGED, ControlPlane
from support import eventually, judged_rollback

REPO = Path(__file__).resolve().parents[2]
API = "okra.mumo.co/v1alpha1"
ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012"
LISTENER = f"{ARN}:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
RID = "5e7a1b2c"
TEMPLATE = GVK("okra.mumo.co", "v1alpha1", "AnalysisTemplate")
STEPS: list[dict[str, Any]] = [
    {"stepWeight": 20},
    {"analysis": {"templates": [{"templateName": "success-rate"}]}},
    {"pause": {}},
    {"setWeight": 100},
]


@pytest.fixture(scope="session")
def okra_crds(control_plane: ControlPlane) -> list[str]:
    return control_plane.install_crds([REPO / "config" / "crd" / "bases"])


def now(ago: float = 0) -> str:
    t = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=ago)
    return t.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def cond(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now(30),
    }


def paused_status() -> dict[str, Any]:
    message = "canary v2 at 20%: paused at step 2"
    return {
        "observedGeneration": 1,
        "phase": "Migrating",
        "health": "Paused",
        "message": message,
        "stableVersion": "v1",
        "canaryVersion": "v2",
        "canaryWeight": 20,
        "currentStepIndex": 2,
        "rolloutId": RID,
        "stepStartedAt": now(20),
        "pausedReason": "Pause",
        "analysisRuns": {"step-1": f"web-v2-{RID}-step-1"},
        "conditions": [
            cond("Progressing", "True", "Paused", message),
            cond("Paused", "True", "Pause", "marker-frame-one"),
        ],
    }


async def okra(
    cp: ControlPlane, namespace: str, *args: str, user: str = ADMIN
) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *command(cp, namespace, *args, user=user),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def command(cp: ControlPlane, namespace: str, *args: str, user: str = ADMIN) -> list[str]:
    return [
        sys.executable,
        "-m",
        "okra_controllers.cli",
        "--kubeconfig",
        str(cp.kubeconfig(user)),
        "-n",
        namespace,
        *args,
    ]


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def owner(cell: dict[str, Any]) -> list[dict[str, Any]]:
    m = cell["metadata"]
    return [
        {"apiVersion": API, "kind": "Cell", "name": m["name"], "uid": m["uid"], "controller": True}
    ]


async def create_with_status(c: Client, obj: dict[str, Any], status: dict[str, Any]) -> Any:
    created = await c.create(obj)
    created["status"] = status
    return await c.update_status(created)


async def make_cell(
    c: Client, ns: str, status: dict[str, Any] | None = None, name: str = "web"
) -> dict[str, Any]:
    cell = await c.create(
        {
            "apiVersion": API,
            "kind": "Cell",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "ingress": {
                    "type": "AWSApplicationLoadBalancer",
                    "awsApplicationLoadBalancer": {
                        "listenerARN": LISTENER,
                        "targetGroupSelector": {"matchLabels": {"app": name}},
                    },
                },
                "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS}},
            },
        }
    )
    if status is not None:
        cell["status"] = status
        cell = await c.update_status(cell)
    return cell


async def rollout_world(c: Client, ns: str) -> dict[str, Any]:
    """A Cell paused at step 3/4 (an indefinite pause) of the rollout v1 -> v2, after a
    successful analysis at step 2; v3 failed earlier and is blocked."""
    cell = await make_cell(c, ns, paused_status())
    weights = {"web-a-v1": 40, "web-b-v1": 40, "web-a-v2": 20}
    for name in weights:
        await c.create(
            {
                "apiVersion": API,
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {"app": "web", "okra.mumo.co/version": name.rsplit("-", 1)[1]},
                },
                "spec": {"arn": f"{ARN}:targetgroup/{name}/0123456789abcdef"},
            }
        )
    forward = [
        {"name": n, "arn": f"{ARN}:targetgroup/{n}/0123456789abcdef", "weight": w}
        for n, w in weights.items()
    ]
    config = await c.create(
        {
            "apiVersion": API,
            "kind": "AWSApplicationLoadBalancerConfig",
            "metadata": {"name": "web", "namespace": ns, "ownerReferences": owner(cell)},
            "spec": {"listenerARN": LISTENER, "forwardTargetGroups": forward},
        }
    )
    config["status"] = {
        "observedGeneration": config["metadata"]["generation"],
        "lastAppliedTime": now(10),
        "lastReadTime": now(10),
        "applied": {"listenerARN": LISTENER, "forwardTargetGroups": forward},
        "conditions": [cond("Synced", "True", "Synced", "rule forwards as specified")],
    }
    await c.update_status(config)
    pause = await c.create(
        {
            "apiVersion": API,
            "kind": "Pause",
            "metadata": {
                "name": f"web-v2-{RID}-pause-2",
                "namespace": ns,
                "ownerReferences": owner(cell),
            },
            "spec": {},
        }
    )
    pause["status"] = {"phase": "Started", "lastTransitionTime": now(20)}
    await c.update_status(pause)
    await create_with_status(
        c,
        {
            "apiVersion": API,
            "kind": "AnalysisRun",
            "metadata": {
                "name": f"web-v2-{RID}-step-1",
                "namespace": ns,
                "labels": {"okra.mumo.co/cell": "web", "okra.mumo.co/rollout": RID},
                "ownerReferences": owner(cell),
            },
            "spec": {
                "metrics": [
                    {"name": "success-rate", "provider": {"web": {"url": "http://127.0.0.1:9/"}}}
                ]
            },
        },
        {
            "phase": "Successful",
            "metricResults": [
                {
                    "name": "success-rate",
                    "phase": "Successful",
                    "count": 2,
                    "successful": 2,
                    "measurements": [
                        {
                            "phase": "Successful",
                            "value": "0.981",
                            "startedAt": now(60),
                            "finishedAt": now(60),
                        },
                        {
                            "phase": "Successful",
                            "value": "0.993",
                            "startedAt": now(50),
                            "finishedAt": now(50),
                        },
                    ],
                }
            ],
        },
    )
    await c.create(
        {
            "apiVersion": API,
            "kind": "VersionBlocklist",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "items": [
                    {"version": "v0.9", "cause": "old failure", "time": now(86400)},
                    {"version": "v3", "cause": "analysis web-v3-x-step-1 Failed", "time": now(600)},
                ]
            },
        }
    )
    return cell


@pytest.fixture
async def world(rt_client: Client, namespace: str, okra_crds: list[str]) -> dict[str, Any]:
    return await rollout_world(rt_client, namespace)


# -- get ---------------------------------------------------------------------


async def test_get_cell_shows_the_rollout(
    control_plane: ControlPlane, namespace: str, world: dict[str, Any]
) -> None:
    code, out, err = await okra(control_plane, namespace, "get", "cell", "web")
    assert (code, err) == (0, "")
    assert f"Cell:     web   (namespace {namespace}" in out
    assert "Phase:    Migrating (Paused)  canary v2 at 20%: paused at step 2" in out
    assert "Stable:   v1  80%" in out
    assert f"Canary:   v2  20%  (rollout {RID}" in out
    said = "AWSApplicationLoadBalancerConfig web: Synced (AWS showed these weights when read"
    assert re.search(rf"{re.escape(said)} from AWS \d+s ago, applied \d+s ago\)", out), out
    tg_rows = {
        line.split()[-4]: line.split() for line in out.splitlines() if "targetgroup/" in line
    }
    assert tg_rows["web-a-v1"][:5] == ["v1", "(stable)", "web-a-v1", "40", "✓"]
    assert tg_rows["web-b-v1"][:3] == ["web-b-v1", "40", "✓"]
    assert tg_rows["web-a-v2"][:5] == ["v2", "(canary)", "web-a-v2", "20", "✓"]
    assert "Steps:    3/4" in out
    marks = [line.split()[:2] for line in out.splitlines() if line[2:3] in ("✓", "▶", "·")]
    assert marks == [["✓", "1."], ["✓", "2."], ["▶", "3."], ["·", "4."]]
    assert "paused until promoted (okra promote web)" in out
    assert f"web-v2-{RID}-step-1  step 2  Successful" in out
    assert "success-rate  Successful  0.981 (Successful), 0.993 (Successful)" in out
    assert "Blocked versions  (VersionBlocklist web)" in out
    assert "analysis web-v3-x-step-1 Failed" in out
    assert "Paused       True    Pause" in out


async def test_get_cell_as_json_carries_every_object(
    control_plane: ControlPlane, namespace: str, world: dict[str, Any]
) -> None:
    code, out, _ = await okra(control_plane, namespace, "get", "cell", "web", "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["cell"]["status"]["rolloutId"] == RID
    assert "managedFields" not in doc["cell"]["metadata"]
    assert [t["metadata"]["name"] for t in doc["targetGroups"]] == [
        "web-a-v1",
        "web-a-v2",
        "web-b-v1",
    ]
    assert doc["loadBalancerConfig"]["metadata"]["name"] == "web"
    assert [r["metadata"]["name"] for r in doc["analysisRuns"]] == [f"web-v2-{RID}-step-1"]
    assert [i["version"] for i in doc["versionBlocklist"]["spec"]["items"]] == ["v0.9", "v3"]


async def test_get_cells_and_target_groups(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    await make_cell(
        rt_client,
        namespace,
        {"phase": "Completed", "health": "Healthy", "stableVersion": "v7"},
        "api",
    )
    code, out, _ = await okra(control_plane, namespace, "get", "cells")
    assert code == 0
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "PHASE", "HEALTH", "STABLE", "CANARY", "WEIGHT", "STEP", "AGE"]
    assert rows[1][:7] == ["api", "Completed", "Healthy", "v7", "-", "-", "-"]
    assert rows[2][:7] == ["web", "Migrating", "Paused", "v1", "v2", "20", "3/4"]

    code, out, _ = await okra(control_plane, namespace, "get", "targetgroups", "--cell", "web")
    assert code == 0
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "VERSION", "WEIGHT", "ARN"]
    assert [r[:3] for r in rows[1:]] == [
        ["web-a-v1", "v1", "40"],
        ["web-a-v2", "v2", "20"],
        ["web-b-v1", "v1", "40"],
    ]
    assert rows[1][3] == f"{ARN}:targetgroup/web-a-v1/0123456789abcdef"


async def test_missing_cell_is_one_clear_line(
    control_plane: ControlPlane, namespace: str, okra_crds: list[str]
) -> None:
    for args in (("get", "cell", "nope"), ("promote", "nope"), ("abort", "nope")):
        code, out, err = await okra(control_plane, namespace, *args)
        assert code == 1
        assert err == f"error: cell nope not found in namespace {namespace}\n"
        assert out == ""


async def test_api_errors_carry_the_servers_message(
    control_plane: ControlPlane, namespace: str, world: dict[str, Any]
) -> None:
    code, out, err = await okra(control_plane, namespace, "get", "cells", user=UNPRIVILEGED)
    assert (code, out) == (1, "")
    assert err == (
        'error: cells.okra.mumo.co is forbidden: User "alice" cannot list resource '
        f'"cells" in API group "okra.mumo.co" in the namespace "{namespace}" (403 Forbidden)\n'
    )
    code, _, err = await okra(
        control_plane, namespace, "run", "analysis", "--template", "nope", "--name", "r"
    )
    assert code == 1
    assert err.startswith("error: AnalysisTemplate 'nope' not found in namespace")
    assert "Traceback" not in err


# -- promote / abort / retry / set version -------------------------------------


async def test_promote_at_a_pause_cancels_it_and_annotates(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    code, out, err = await okra(control_plane, namespace, "promote", "web")
    assert (code, err) == (0, "")
    pause = await rt_client.get(PAUSE, f"web-v2-{RID}-pause-2", namespace)
    assert pause["spec"]["cancelled"] is True
    cell = await rt_client.get(CELL, "web", namespace)
    assert cell["metadata"]["annotations"]["okra.mumo.co/promote"] == f"{RID}/2"
    assert f"pause web-v2-{RID}-pause-2: cancelled" in out
    assert "ending the pause at step 3/4" in out

    code, out, err = await okra(control_plane, namespace, "promote", "web", "--full")
    assert code == 0
    cell = await rt_client.get(CELL, "web", namespace)
    assert cell["metadata"]["annotations"]["okra.mumo.co/promote"] == f"{RID}/full"


async def test_promote_and_abort_need_a_rollout(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    await make_cell(
        rt_client,
        namespace,
        {"phase": "Completed", "health": "Healthy", "message": "v1 serves 100%"},
    )
    for verb in ("promote", "abort"):
        code, out, err = await okra(control_plane, namespace, verb, "web")
        assert (code, out) == (1, "")
        assert err == (
            "error: cell web has no rollout in progress "
            "(phase Completed, Healthy: v1 serves 100%)\n"
        )
    cell = await rt_client.get(CELL, "web", namespace)
    assert not cell["metadata"].get("annotations")


async def test_history_lists_the_cells_rollouts_and_one_rollouts_timeline(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    """`okra history cell`: the records the API server accepted in the Cell's status, as a
    table and as one rollout's timeline (a judged analysis with its comparison); -o yaml
    prints the record itself."""
    failed = judged_rollback()
    await make_cell(
        rt_client,
        namespace,
        {"phase": "Error", "health": "Degraded", "stableVersion": "v1", "history": [failed]},
    )
    code, out, err = await okra(control_plane, namespace, "history", "cell", "web")
    assert (code, err) == (0, "")
    head, row = out.splitlines()
    assert head.split() == [
        "ROLLOUT",
        "FROM",
        "→",
        "TO",
        "TRIGGER",
        "STARTED",
        "TOOK",
        "OUTCOME",
        "CAUSE",
    ]
    assert row.split()[:9] == [
        "20261204t0251-ab12",
        "v1",
        "→",
        "v2",
        "NewVersion",
        "2026-12-04",
        "02:51:00",
        "4m3s",
        "RolledBack",
    ]
    code, out, err = await okra(control_plane, namespace, "history", "cell", "web", "20261204")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "cell web: rollout 20261204t0251-ab12, v1 → v2 (NewVersion), RolledBack, 4m3s",
        "  2026-12-04 02:51:00  step 1 began",
        "  2026-12-04 02:51:00   RolloutStarted: canary v2 from v1",
        "  2026-12-04 02:53:00  step 1 ended (canary at 20%); traffic Confirmed: v1 80.4% "
        "(planned 80%), v2 19.6% (planned 20%) of 1200 requests",
        "  2026-12-04 02:53:00  step 2 began",
        "  2026-12-04 02:55:00  !analysis web-ab12-step-1 (step-1) Failed: score 41 < 75; "
        "score 41 (Fail; pass 90, marginal 75)",
        "                        p99 Failed: 1 measured, 0 successful, 1 failed; last 138; "
        "judged High: canary median 138 (30 values) vs baseline median 100 (30 values), +38%, "
        "p 0.0001",
        "  2026-12-04 02:55:03  step 2 ended (canary at 40%)",
        "  2026-12-04 02:55:03  !RolloutFailed: version v2 failed: p99 +38%",
        "  2026-12-04 02:55:03  RolledBack: version v2 failed: p99 +38%",
    ]
    code, out, _ = await okra(control_plane, namespace, "history", "cell", "web", "x", "-o", "yaml")
    assert (code, out) == (1, "")
    code, out, _ = await okra(
        control_plane, namespace, "history", "cell", "web", "20261204t0251-ab12", "-o", "yaml"
    )
    assert code == 0
    assert RolloutRecord.model_validate(yaml.safe_load(out)) == RolloutRecord.model_validate(failed)


async def test_a_systems_history_is_its_applications(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    """`okra history cell SYSTEM`: one table per application, from each application Cell's
    record; a rollout ID finds the application's rollout."""
    system = await rt_client.create(
        {
            "apiVersion": API,
            "kind": "Cell",
            "metadata": {"name": "shop", "namespace": namespace},
            "spec": {
                "clusters": [{"name": "c1", "labels": {"role": "web"}}],
                "applications": [
                    {
                        "name": "web",
                        "clusterSelector": {"role": "web"},
                        "alb": {
                            "listenerARN": LISTENER,
                            "forwardConfig": {
                                "priority": 10,
                                "targetGroup": {"arnFromLabel": "targetGroupARN"},
                            },
                            "updateStrategy": {"stepWeight": 50},
                        },
                    }
                ],
            },
        }
    )
    system["status"] = {"applications": [{"name": "web", "cell": "shop-web"}]}
    await rt_client.update_status(system)
    await make_cell(rt_client, namespace, {"history": [judged_rollback()]}, name="shop-web")
    code, out, err = await okra(control_plane, namespace, "history", "cell", "shop")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "application web (cell shop-web):"
    assert lines[2].split()[:2] == ["20261204t0251-ab12", "v1"]
    code, out, err = await okra(control_plane, namespace, "history", "cell", "shop", "2026")
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        "application web (cell shop-web)",
        "cell shop-web: rollout 20261204t0251-ab12, v1 → v2 (NewVersion), RolledBack, 4m3s",
    ]
    code, out, _ = await okra(control_plane, namespace, "history", "cell", "shop", "-o", "json")
    assert code == 0
    assert [r["rolloutId"] for r in json.loads(out)["web"]] == ["20261204t0251-ab12"]


async def test_abort_then_retry(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    code, out, _ = await okra(control_plane, namespace, "abort", "web")
    assert code == 0
    assert "aborting rollout" in out
    cell = await rt_client.get(CELL, "web", namespace)
    assert cell["metadata"]["annotations"]["okra.mumo.co/abort"] == RID

    code, out, err = await okra(control_plane, namespace, "retry", "web")
    assert (code, err) == (0, "")
    cell = await rt_client.get(CELL, "web", namespace)
    assert "okra.mumo.co/abort" not in (cell["metadata"].get("annotations") or {})
    blocklist = await rt_client.get(BLOCKLIST, "web", namespace)
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v0.9"]  # older than v1
    assert out.splitlines() == [
        f"cell web: removed okra.mumo.co/abort={RID}; the rollout starts over",
        "versionblocklist web: removed v3 (blocked for: analysis web-v3-x-step-1 Failed)",
    ]

    code, out, _ = await okra(control_plane, namespace, "retry", "web", "0.9.0")
    assert code == 0
    assert out == "versionblocklist web: removed v0.9 (blocked for: old failure)\n"
    blocklist = await rt_client.get(BLOCKLIST, "web", namespace)
    assert blocklist["spec"]["items"] == []

    code, out, _ = await okra(control_plane, namespace, "retry", "web")
    assert code == 0
    assert out.startswith("cell web: nothing to retry")


async def test_set_version_and_clear(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    code, out, err = await okra(control_plane, namespace, "set", "version", "web", "v1")
    assert (code, err) == (0, "")
    assert out == "cell web: spec.version set to v1\n"
    assert (await rt_client.get(CELL, "web", namespace))["spec"]["version"] == "v1"

    code, out, err = await okra(control_plane, namespace, "set", "version", "web", "v3")
    assert code == 0
    assert "warning: v3 is in VersionBlocklist web" in err
    assert "warning: no AWSTargetGroup of version v3" in err

    code, out, _ = await okra(control_plane, namespace, "set", "version", "web", "--clear")
    assert code == 0
    assert out.startswith("cell web: spec.version cleared (was v3)")
    assert "version" not in (await rt_client.get(CELL, "web", namespace))["spec"]

    code, _, err = await okra(control_plane, namespace, "set", "version", "web", "latest")
    assert code == 1
    assert "'latest' is not a version" in err


# -- watch -------------------------------------------------------------------


async def read_until(stream: asyncio.StreamReader, buf: bytearray, marker: bytes) -> None:
    while marker not in buf:
        chunk = await asyncio.wait_for(stream.read(65536), 30)
        assert chunk, f"stream ended before {marker!r}; got {bytes(buf).decode()}"
        buf.extend(chunk)


async def test_watch_prints_a_frame_per_change_and_stops_on_sigint(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    proc = await asyncio.create_subprocess_exec(
        *command(control_plane, namespace, "get", "cell", "web", "--watch"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdout is not None
    buf = bytearray()
    try:
        await read_until(proc.stdout, buf, b"marker-frame-one")
        cell = await rt_client.get(CELL, "web", namespace)
        cell["status"] = {
            **cell["status"],
            "phase": "Migrating",
            "health": "Progressing",
            "message": "canary v2 at 60% (step 4/4)",
            "currentStepIndex": 3,
            "pausedReason": None,
            "conditions": [cond("Progressing", "True", "Progressing", "marker-frame-two")],
        }
        del cell["status"]["pausedReason"]
        await rt_client.update_status(cell)
        await read_until(proc.stdout, buf, b"marker-frame-two")
        proc.send_signal(signal.SIGINT)
        rest, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err
    frames = (bytes(buf) + rest).decode().split("\n---\n")
    assert len(frames) == 2, frames
    assert "Phase:    Migrating (Paused)" in frames[0]
    assert "▶  3.  pause (until promoted)" in frames[0]
    assert "Phase:    Migrating (Progressing)  canary v2 at 60% (step 4/4)" in frames[1]
    assert "▶  4.  setWeight 100" in frames[1]
    assert "\x1b[" not in frames[0] + frames[1]  # no colour or screen clearing on a pipe


# -- run analysis ------------------------------------------------------------


@pytest.mark.parametrize(("verdict", "exit_code"), [("Successful", 0), ("Failed", 1)])
async def test_run_analysis_waits_for_the_verdict(
    control_plane: ControlPlane,
    rt_client: Client,
    namespace: str,
    okra_crds: list[str],
    verdict: str,
    exit_code: int,
) -> None:
    await rt_client.create(
        {
            "apiVersion": API,
            "kind": "AnalysisTemplate",
            "metadata": {"name": "success-rate", "namespace": namespace},
            "spec": {
                "args": [{"name": "service"}],
                "metrics": [
                    {
                        "name": "rate",
                        "provider": {"web": {"url": "http://127.0.0.1:9/{{args.service}}"}},
                    }
                ],
            },
        }
    )
    proc = await asyncio.create_subprocess_exec(
        *command(
            control_plane,
            namespace,
            "run",
            "analysis",
            "--template",
            "success-rate",
            "--arg",
            "service=web",
            "--name",
            "adhoc",
            "--wait",
        ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdout is not None
    buf = bytearray()
    try:
        await read_until(proc.stdout, buf, b"analysisrun adhoc created")

        async def exists() -> bool:
            try:
                await rt_client.get(ANALYSIS_RUN, "adhoc", namespace)
            except NotFoundError:  # not made yet; any other refusal fails the test
                return False
            return True

        assert await eventually(exists)
        run = await rt_client.get(ANALYSIS_RUN, "adhoc", namespace)
        assert run["spec"]["args"] == [{"name": "service", "value": "web"}]
        run["status"] = {
            "phase": "Running",
            "metricResults": [
                {
                    "name": "rate",
                    "phase": "Running",
                    "count": 1,
                    "measurements": [
                        {
                            "phase": "Successful",
                            "value": "0.99",
                            "startedAt": now(2),
                            "finishedAt": now(1),
                        },
                    ],
                }
            ],
        }
        run = await rt_client.update_status(run)
        await read_until(proc.stdout, buf, b"rate: 0.99 (Successful)")
        second = "0.42" if verdict == "Failed" else "0.97"
        run["status"] = {
            "phase": verdict,
            "message": "done",
            "metricResults": [
                {
                    "name": "rate",
                    "phase": verdict,
                    "count": 2,
                    "measurements": [
                        run["status"]["metricResults"][0]["measurements"][0],
                        {
                            "phase": verdict,
                            "value": second,
                            "startedAt": now(1),
                            "finishedAt": now(0),
                        },
                    ],
                }
            ],
        }
        await rt_client.update_status(run)
        rest, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    out = (bytes(buf) + rest).decode()
    assert proc.returncode == exit_code, err.decode()
    assert out.count("rate: 0.99 (Successful)") == 1  # each measurement printed once
    assert f"rate: {second} ({verdict})" in out
    assert out.rstrip().endswith(f"analysisrun adhoc: {verdict}: done")


async def test_namespace_defaults_to_the_contexts(
    control_plane: ControlPlane,
    rt_client: Client,
    namespace: str,
    world: dict[str, Any],
    tmp_path: Path,
) -> None:
    import yaml

    kubeconfig = yaml.safe_load(control_plane.kubeconfig().read_text())
    kubeconfig["contexts"][0]["context"]["namespace"] = namespace
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "okra_controllers.cli",
        "--kubeconfig",
        str(path),
        "get",
        "cells",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    assert out.decode().splitlines()[1].split()[:3] == ["web", "Migrating", "Paused"]


# -- status / pause / -A / analysisrun / version ---------------------------------


async def set_status(c: Client, ns: str, name: str, **fields: Any) -> None:
    cell = await c.get(CELL, name, ns)
    cell["status"] = {**(cell.get("status") or {}), **fields}
    await c.update_status(cell)


async def test_status_exit_codes(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    """0 once Healthy (at the current generation), 1 when Degraded, 3 on timeout or, with
    --no-watch, while not finished."""
    await make_cell(
        rt_client, namespace, {"observedGeneration": 1, "phase": "Completed", "health": "Healthy"}
    )
    code, out, _ = await okra(control_plane, namespace, "status", "web")
    assert (code, out) == (0, "Completed (Healthy)\n")

    await set_status(
        rt_client,
        namespace,
        "web",
        phase="Migrating",
        health="Progressing",
        message="canary v2 at 20%",
    )
    code, out, err = await okra(control_plane, namespace, "status", "web", "--timeout", "1s")
    assert code == 3
    assert out == "Migrating (Progressing) - canary v2 at 20%\n"
    assert err == "error: cell web: not finished after 1s\n"
    code, out, _ = await okra(control_plane, namespace, "status", "web", "--no-watch")
    assert (code, out) == (3, "Migrating (Progressing) - canary v2 at 20%\n")

    # Waiting, then Degraded: the command follows the changes and exits 1.
    proc = await asyncio.create_subprocess_exec(
        *command(control_plane, namespace, "status", "web", "--timeout", "60s"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdout is not None
    buf = bytearray()
    await read_until(proc.stdout, buf, b"Migrating (Progressing) - canary v2 at 20%")
    await set_status(
        rt_client, namespace, "web", phase="Migrating", health="Paused", message="paused at step 2"
    )
    await read_until(proc.stdout, buf, b"Migrating (Paused) - paused at step 2")
    await set_status(
        rt_client, namespace, "web", phase="Error", health="Degraded", message="v2 failed"
    )
    rest, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    assert (bytes(buf) + rest).decode().splitlines() == [
        "Migrating (Progressing) - canary v2 at 20%",
        "Migrating (Paused) - paused at step 2",
        "Error (Degraded) - v2 failed",
    ]

    # Healthy for an older generation is not finished: the controller has not seen the spec.
    await rt_client.patch(CELL, "web", {"spec": {"replicas": 2}}, namespace=namespace)
    await set_status(
        rt_client, namespace, "web", phase="Completed", health="Healthy", message="v1 serves 100%"
    )
    code, out, _ = await okra(control_plane, namespace, "status", "web", "--no-watch")
    assert (code, out) == (3, "Completed (Healthy) - v1 serves 100%; waiting for the controller\n")
    code, _, err = await okra(control_plane, namespace, "status", "nope")
    assert (code, err) == (1, f"error: cell nope not found in namespace {namespace}\n")


async def test_pause_then_promote_resumes(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    code, out, err = await okra(control_plane, namespace, "pause", "web")
    assert (code, err) == (0, "")
    assert "the rollout of v2 holds at 20% before its next step" in out
    cell = await rt_client.get(CELL, "web", namespace)
    assert cell["metadata"]["annotations"]["okra.mumo.co/pause"] == "true"
    code, out, _ = await okra(control_plane, namespace, "pause", "web")
    assert out == "cell web: already paused (okra promote web resumes)\n"

    code, out, _ = await okra(control_plane, namespace, "promote", "web")
    assert (code, out) == (0, "cell web: resumed (removed okra.mumo.co/pause)\n")
    cell = await rt_client.get(CELL, "web", namespace)
    annotations = cell["metadata"].get("annotations") or {}
    assert "okra.mumo.co/pause" not in annotations
    assert "okra.mumo.co/promote" not in annotations  # resuming does not also skip a step


async def test_get_across_namespaces_and_output_formats(
    control_plane: ControlPlane,
    rt_client: Client,
    namespace: str,
    world: dict[str, Any],
) -> None:
    other = f"{namespace}-b"
    await rt_client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        await make_cell(
            rt_client,
            other,
            {"phase": "Completed", "health": "Healthy", "stableVersion": "v7"},
            "api",
        )
        code, out, _ = await okra(control_plane, namespace, "get", "cells", "-A")
        assert code == 0
        rows = [line.split() for line in out.splitlines()]
        assert rows[0][:4] == ["NAMESPACE", "NAME", "PHASE", "HEALTH"]
        assert [namespace, "web", "Migrating", "Paused"] in [r[:4] for r in rows]
        assert [other, "api", "Completed", "Healthy"] in [r[:4] for r in rows]

        code, out, _ = await okra(control_plane, namespace, "get", "cells", "-o", "wide")
        rows = [line.split() for line in out.splitlines()]
        assert rows[0] == [
            "NAME",
            "PHASE",
            "HEALTH",
            "STABLE",
            "CANARY",
            "WEIGHT",
            "STEP",
            "AGE",
            "LISTENER",
            "MESSAGE",
        ]
        assert rows[1][8] == "web"  # the load balancer's name from the listener ARN
        assert " ".join(rows[1][9:]) == "canary v2 at 20%: paused at step 2"

        code, out, _ = await okra(control_plane, namespace, "get", "cells", "-o", "name")
        assert out == "cell.okra.mumo.co/web\n"
        code, out, _ = await okra(control_plane, namespace, "get", "tg", "-o", "name")
        assert out.splitlines() == [
            "awstargetgroup.okra.mumo.co/web-a-v1",
            "awstargetgroup.okra.mumo.co/web-a-v2",
            "awstargetgroup.okra.mumo.co/web-b-v1",
        ]
        code, out, _ = await okra(control_plane, namespace, "get", "tg", "-A", "-o", "wide")
        rows = [line.split() for line in out.splitlines()]
        assert rows[0] == ["NAMESPACE", "NAME", "VERSION", "CELL", "WEIGHT", "ARN", "LABELS"]
        # -A lists the other tests' namespaces too: look at this test's rows only
        ours = [r for r in rows[1:] if r[0] == namespace]
        assert ours[0][:5] == [namespace, "web-a-v1", "v1", "web", "40"]
        assert ours[0][6] == "app=web,okra.mumo.co/version=v1"
        code, out, _ = await okra(control_plane, namespace, "get", "cells", "-A", "-o", "json")
        assert {c["metadata"]["name"] for c in json.loads(out)["items"]} >= {"web", "api"}
    finally:
        await rt_client.delete(GVK("", "v1", "Namespace"), other)


async def test_get_cells_all_namespaces_watch(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    proc = await asyncio.create_subprocess_exec(
        *command(control_plane, namespace, "get", "cells", "-A", "--watch"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdout is not None
    buf = bytearray()
    try:
        await read_until(proc.stdout, buf, b"Paused")
        await set_status(rt_client, namespace, "web", canaryWeight=60, currentStepIndex=3)
        await read_until(proc.stdout, buf, b"---")
        await read_until(proc.stdout, buf, b"4/4")
        proc.send_signal(signal.SIGINT)
        rest, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    frames = (bytes(buf) + rest).decode().split("---\n")
    row = {
        f: next(line.split() for line in f.splitlines() if line.startswith(namespace))
        for f in frames[-2:]
    }
    first, second = row.values()
    assert first[1:8] == ["web", "Migrating", "Paused", "v1", "v2", "20", "3/4"]
    assert second[1:8] == ["web", "Migrating", "Paused", "v1", "v2", "60", "4/4"]


async def test_get_and_terminate_analysisrun(
    control_plane: ControlPlane, rt_client: Client, namespace: str, world: dict[str, Any]
) -> None:
    name = f"web-v2-{RID}-step-1"
    code, out, err = await okra(control_plane, namespace, "get", "analysisrun", name)
    assert (code, err) == (0, "")
    assert f"AnalysisRun: {name}" in out
    assert "Phase:    Successful" in out
    assert f"Cell:     web  (rollout {RID})" in out
    assert "Metric success-rate: Successful  count 2, successful 2" in out
    measured = [line.split()[-2:] for line in out.splitlines() if "ago" in line]
    assert measured == [["Successful", "0.981"], ["Successful", "0.993"]]

    code, out, _ = await okra(control_plane, namespace, "get", "analysisruns", "--cell", "web")
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "PHASE", "CELL", "ROLLOUT", "AGE"]
    assert rows[1][:4] == [name, "Successful", "web", RID]

    code, out, _ = await okra(control_plane, namespace, "terminate", "analysisrun", name)
    assert (code, out) == (
        0,
        f"analysisrun {name}: already finished (Successful); nothing to terminate\n",
    )
    run = await rt_client.get(ANALYSIS_RUN, name, namespace)
    run["status"]["phase"] = "Running"
    await rt_client.update_status(run)
    code, out, _ = await okra(control_plane, namespace, "terminate", "okar", name)
    assert code == 0
    assert out.startswith(f"analysisrun {name}: terminating (was Running)")
    assert (await rt_client.get(ANALYSIS_RUN, name, namespace))["spec"]["terminate"] is True
    code, _, err = await okra(control_plane, namespace, "get", "analysisrun", "nope")
    assert (code, err) == (1, f"error: analysisrun nope not found in namespace {namespace}\n")


async def test_version_with_and_without_a_cluster(
    control_plane: ControlPlane,
    rt_client: Client,
    namespace: str,
    okra_crds: list[str],
    tmp_path: Path,
) -> None:
    code, out, _ = await okra(control_plane, namespace, "version", "-o", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["client"]["version"] == "0.1.0"
    assert doc["kubernetes"]["gitVersion"].startswith("v1.")
    assert doc["manager"].startswith("not found")
    await rt_client.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "okra-manager",
                "namespace": namespace,
                "labels": {
                    "app.kubernetes.io/name": "okra",
                    "app.kubernetes.io/component": "manager",
                },
            },
            "spec": {
                "selector": {"matchLabels": {"app": "okra"}},
                "template": {
                    "metadata": {"labels": {"app": "okra"}},
                    "spec": {
                        "containers": [{"name": "manager", "image": "r.io/okra-manager:0.1.0"}]
                    },
                },
            },
        }
    )
    code, out, _ = await okra(control_plane, namespace, "version")
    assert code == 0
    assert f"okra-manager: 0.1.0  ({namespace}/okra-manager, 0/1 ready" in out
    # Unreachable: still exit 0, with the client's version and the reason.
    config = yaml.safe_load(control_plane.kubeconfig(ADMIN).read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(yaml.safe_dump(config))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "okra_controllers.cli",
        "--kubeconfig",
        str(dead),
        "version",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    out_b, _ = await proc.communicate()
    assert proc.returncode == 0
    lines = out_b.decode().splitlines()
    assert lines[0] == "okra (client): 0.1.0"
    assert lines[1].startswith("server: unreachable (cannot reach the API server")


async def test_plan_a_file_over_the_live_cell_without_aws(
    control_plane: ControlPlane,
    rt_client: Client,
    namespace: str,
    world: dict[str, Any],
    tmp_path: Path,
) -> None:
    """`okra plan FILE`: the file's spec with the live Cell's status. Changing the steps
    restarts the rollout (a new step hash), so the plan starts from step 1 again."""
    cell = await rt_client.get(CELL, "web", namespace)
    before = cell["metadata"]["resourceVersion"]
    doc = {
        "apiVersion": API,
        "kind": "Cell",
        "metadata": {"name": "web"},
        "spec": {**cell["spec"], "updateStrategy": {"canary": {"steps": [{"setWeight": 50}]}}},
    }
    path = tmp_path / "cell.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, out, err = await okra(control_plane, namespace, "plan", str(path), "--no-aws")
    assert (code, err) == (0, ""), err
    assert f"from {path} (over the live Cell's status)" in out
    assert "AWS:      not read (--no-aws)" in out
    assert "  v3: web-a-v2" not in out
    assert "Desired:  v2" in out
    assert "1. at step 1/1: setWeight 50; RolloutStarted" in out
    assert "weights: web-a-v1=25  web-b-v1=25  web-a-v2=50" in out
    assert "weights: web-a-v2=100" in out
    assert "Result:   v2 serves 100%" in out
    # Planning wrote nothing.
    cell = await rt_client.get(CELL, "web", namespace)
    assert cell["metadata"]["resourceVersion"] == before

    code, out, _ = await okra(control_plane, namespace, "plan", "web", "--no-aws", "-o", "json")
    doc = json.loads(out)
    assert doc["cell"]["source"] == "live"
    # This hand-made status has no step hash, so the controller would start the rollout of
    # v2 over; the plan says so and walks it to the end.
    assert (doc["now"]["phase"], doc["now"]["health"]) == ("Migrating", "Progressing")
    assert (doc["finished"], doc["resultVersion"], doc["blockedBy"]) == (True, "v2", None)
    assert [e["reason"] for e in doc["stages"][0]["events"]] == ["RolloutStarted"]
    code, _, err = await okra(control_plane, namespace, "plan", "nope", "--no-aws")
    assert (code, err) == (1, f"error: cell nope not found in namespace {namespace}\n")


SYSTEM_MANAGER = "okra-system-cell-controller"  # the system Cell controller's field manager


def system_application(name: str, priority: int) -> dict[str, Any]:
    return {
        "name": name,
        "clusterSelector": {"matchEKSTags": {"role": name}},
        "alb": {
            "listenerARN": LISTENER,
            "forwardConfig": {
                "priority": priority,
                "targetGroup": {"arnFromLabel": "targetGroupARN"},
            },
            "updateStrategy": {"stepWeight": 50, "totalWeight": 100},
        },
    }


def application_cell(ns: str, system: str, app: str, annotations: dict[str, str]) -> Any:
    """An application's Cell as the system Cell applies it (its labels, its hold
    annotations, the spec of `make_cell`)."""
    labels = {"okra.mumo.co/system": system, "okra.mumo.co/application": app}
    meta = {"name": f"{system}-{app}", "namespace": ns, "labels": labels}
    return {
        "apiVersion": API,
        "kind": "Cell",
        "metadata": {**meta, "annotations": annotations},
        "spec": {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": LISTENER,
                    "targetGroupSelector": {"matchLabels": labels},
                },
            },
            "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS}},
        },
    }


async def system_world(c: Client, ns: str) -> None:
    """System shop: web paused at step 3/4 of v1 -> v2, api Completed; no controller
    runs, the application Cells are applied with the system controller's field manager."""
    shop = {
        "apiVersion": API,
        "kind": "Cell",
        "metadata": {"name": "shop", "namespace": ns},
        "spec": {
            "clusters": [{"name": "web-1", "eks": {}}, {"name": "api-1", "eks": {}}],
            "applications": [system_application("web", 10), system_application("api", 11)],
        },
    }
    await create_with_status(
        c,
        shop,
        {
            "observedGeneration": 1,
            "phase": "Migrating",
            "health": "Progressing",
            "message": "web: v2: canary v2 at 20%",
            "applications": [
                {"name": "web", "cell": "shop-web", "phase": "Syncing", "message": "v2 at 20%"},
                {"name": "api", "cell": "shop-api", "phase": "Synced"},
            ],
        },
    )
    for app, status in (
        ("web", paused_status()),
        ("api", {"phase": "Completed", "health": "Healthy", "message": "v1 serves 100%"}),
    ):
        cell = await c.apply(application_cell(ns, "shop", app, {}), field_manager=SYSTEM_MANAGER)
        cell["status"] = status
        await c.update_status(cell)


async def notes(c: Client, ns: str, name: str) -> dict[str, str]:
    return dict((await c.get(CELL, name, ns))["metadata"].get("annotations") or {})


async def test_a_system_is_operated_through_its_application_cells(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    await system_world(rt_client, namespace)
    code, out, err = await okra(control_plane, namespace, "promote", "shop")
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [
        "cell shop-web: ending the pause at step 3/4 (pause (until promoted)) of rollout "
        f"{RID} (v1 → v2) "
        f"[okra.mumo.co/promote={RID}/2]",
        "application api (cell shop-api): skipped: cell shop-api has no rollout in progress "
        "(phase Completed, Healthy: v1 serves 100%)",
    ]
    assert (await notes(rt_client, namespace, "shop-web"))["okra.mumo.co/promote"] == f"{RID}/2"
    assert await notes(rt_client, namespace, "shop-api") == {}
    code, out, err = await okra(control_plane, namespace, "promote", "shop", "--application", "api")
    assert code == 1
    assert err == (
        "error: system shop: nothing to promote: api: cell shop-api has no rollout in "
        "progress (phase Completed, Healthy: v1 serves 100%)\n"
    )
    code, _, err = await okra(control_plane, namespace, "abort", "shop", "--application", "db")
    assert (code, err) == (
        1,
        "error: --application db: system shop has no such application (it has: web, api)\n",
    )

    # okra pause SYSTEM annotates the system (its plan holds every application); resume
    # removes it. The application Cells are not written.
    code, out, _ = await okra(control_plane, namespace, "pause", "shop")
    assert code == 0
    assert out.startswith("system shop: paused; every application holds")
    assert (await notes(rt_client, namespace, "shop"))["okra.mumo.co/pause"] == "true"
    code, out, _ = await okra(control_plane, namespace, "resume", "shop")
    assert code == 0
    assert out.startswith("system shop: resumed")
    assert "okra.mumo.co/pause" not in await notes(rt_client, namespace, "shop")
    assert "okra.mumo.co/pause" not in await notes(rt_client, namespace, "shop-web")

    # An abort of one application survives the system controller's next apply: the CLI's
    # patch owns the annotation, the system's apply (without it) leaves it alone.
    code, out, _ = await okra(control_plane, namespace, "abort", "shop", "--application", "web")
    assert code == 0
    assert out.startswith(f"cell shop-web: aborting rollout {RID}")
    await rt_client.apply(
        application_cell(namespace, "shop", "web", {}), field_manager=SYSTEM_MANAGER, force=True
    )
    assert (await notes(rt_client, namespace, "shop-web"))["okra.mumo.co/abort"] == RID
    code, out, _ = await okra(control_plane, namespace, "retry", "shop")
    assert code == 0
    assert out.splitlines() == [
        f"cell shop-web: removed okra.mumo.co/abort={RID}; the rollout starts over",
        "cell shop-api: nothing to retry (no rollout is aborted and no blocked version is "
        "newer than the stable version unknown)",
    ]
    assert "okra.mumo.co/abort" not in await notes(rt_client, namespace, "shop-web")

    # What the system decides wins: a rollback after a failed check, and its own pause.
    shop = await rt_client.get(CELL, "shop", namespace)
    shop["status"]["applications"][0]["phase"] = "Reverted"
    await rt_client.update_status(shop)
    code, _, err = await okra(control_plane, namespace, "retry", "shop", "--application", "web")
    assert code == 1
    assert err.startswith(
        "error: system shop: nothing to retry: web: system shop rolls application web back"
    )
    await okra(control_plane, namespace, "pause", "shop")
    code, _, err = await okra(control_plane, namespace, "resume", "shop", "--application", "api")
    assert (code, err) == (
        1,
        "error: system shop: nothing to resume: api: system shop is paused and holds every "
        "application: okra resume shop\n",
    )

    code, _, err = await okra(control_plane, namespace, "pause", "shop-web", "--application", "x")
    assert (code, err) == (
        1,
        "error: --application x: cell shop-web is not a system (it has no spec.applications)\n",
    )


async def test_status_of_a_system_waits_for_every_application(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    await system_world(rt_client, namespace)
    code, out, _ = await okra(control_plane, namespace, "status", "shop", "--no-watch")
    assert (code, out.splitlines()) == (
        3,
        [
            "Migrating (Progressing) - web: v2: canary v2 at 20%",
            "  application web: Syncing - v2 at 20%",
            "  application api: Synced",
        ],
    )
    proc = await asyncio.create_subprocess_exec(
        *command(control_plane, namespace, "status", "shop", "--timeout", "60s"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdout is not None
    buf = bytearray()
    await read_until(proc.stdout, buf, b"application api: Synced")
    apps = [
        {"name": "web", "cell": "shop-web", "phase": "Reverting", "message": "check failed"},
        {"name": "api", "cell": "shop-api", "phase": "Synced"},
    ]
    await set_status(rt_client, namespace, "shop", applications=apps)
    await read_until(proc.stdout, buf, b"application web: Reverting - check failed")
    apps[0] = {**apps[0], "phase": "Reverted", "message": "check failed; rolled back"}
    await set_status(
        rt_client,
        namespace,
        "shop",
        phase="Failed",
        health="Degraded",
        message="web: check failed; rolled back",
        applications=apps,
    )
    rest, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    assert (bytes(buf) + rest).decode().splitlines() == [
        "Migrating (Progressing) - web: v2: canary v2 at 20%",
        "  application web: Syncing - v2 at 20%",
        "  application api: Synced",
        "  application web: Reverting - check failed",
        "Failed (Degraded) - web: check failed; rolled back",
        "  application web: Reverted - check failed; rolled back",
    ]
