"""Check: a standing, templated metric check against a real HTTP endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.analysis.check_controller import CheckReconciler
from okra_controllers.api.kinds import CHECK
from okra_controllers.aws.config import AwsConfig
from okra_runtime import Client, GenerationChanged, Manager, ManagerOptions
from okra_runtime.events import EVENT
from okra_runtime.predicates import AnnotationsChanged, Any_
from okra_testkit.envtest import ControlPlane
from support import ErrorRates, eventually, serve_error_rates, stop_manager

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
async def rates() -> AsyncIterator[ErrorRates]:
    async with serve_error_rates() as r:
        yield r


@pytest.fixture
async def checks(
    rt_client: Client, namespace: str, control_plane: ControlPlane
) -> AsyncIterator[None]:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    rec = CheckReconciler(
        rt_client, mgr.informer_for(CHECK), mgr.event_recorder("check"), AwsConfig(), namespace
    )
    (
        mgr.builder("check")
        .for_(CHECK, predicates=(Any_(GenerationChanged(), AnnotationsChanged()),))
        .complete(rec)
    )
    task = asyncio.create_task(mgr.start())
    yield
    await stop_manager(mgr, task)


def check(name: str, ns: str, url: str, hash_: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Check",
        "metadata": {"name": name, "namespace": ns, "annotations": {"analysis-hash": hash_}},
        "spec": {
            "interval": "1s",
            "max": 0.1,
            "historyLimit": 3,
            "vars": {"eksClusterName": "web-1-v2"},
            "provider": {
                "web": {
                    "url": f"{url}/rate?cluster={{{{.Vars.eksClusterName}}}}",
                    "jsonPath": "{$.rate}",
                }
            },
            **spec,
        },
    }


async def status(c: Client, name: str, ns: str) -> dict[str, Any]:
    return (await c.get(CHECK, name, ns)).get("status") or {}


async def test_check_runs_templated_query_and_reports(
    checks: None, rates: ErrorRates, rt_client: Client, namespace: str
) -> None:
    rates.values["web-1-v2"] = 0.01
    await rt_client.create(check("dd", namespace, rates.url, "h1"))

    async def passed() -> bool:
        st = await status(rt_client, "dd", namespace)
        return st.get("lastPassed") is True and st["analysis"]["observedHash"] == "h1"

    assert await eventually(passed, within=30)
    assert "web-1-v2" in rates.queries  # {{.Vars.eksClusterName}} was filled in

    rates.values["web-1-v2"] = 0.5  # above max 0.1

    async def failed() -> bool:
        return (await status(rt_client, "dd", namespace)).get("lastPassed") is False

    assert await eventually(failed, within=30)
    st = await status(rt_client, "dd", namespace)
    last = st["analysis"]["results"][-1]
    assert (last["phase"], last["value"], last["message"]) == ("Failed", "0.5", "0.5 > max 0.1")
    assert st["conditions"][0]["type"] == "Passed"
    assert st["conditions"][0]["status"] == "False"

    async def bounded() -> bool:
        return len((await status(rt_client, "dd", namespace))["analysis"]["results"]) == 3

    assert await eventually(bounded, within=30)
    await asyncio.sleep(1.5)
    assert len((await status(rt_client, "dd", namespace))["analysis"]["results"]) == 3

    # A new query (new hash) runs at once and is acknowledged in observedHash.
    await rt_client.patch(
        CHECK,
        "dd",
        {
            "metadata": {"annotations": {"analysis-hash": "h2"}},
            "spec": {"vars": {"eksClusterName": "web-2-v2"}, "interval": "1h"},
        },
        namespace=namespace,
    )
    rates.values["web-2-v2"] = 0.0

    async def rehashed() -> bool:
        st = await status(rt_client, "dd", namespace)
        return st["analysis"]["observedHash"] == "h2" and st.get("lastPassed") is True

    assert await eventually(rehashed, within=30)
    assert "web-2-v2" in rates.queries


async def test_check_with_an_unknown_var_reports_the_error(
    checks: None, rates: ErrorRates, rt_client: Client, namespace: str
) -> None:
    obj = check("typo", namespace, rates.url, "h")
    obj["spec"]["vars"] = {"clusterName": "x"}
    await rt_client.create(obj)

    async def errored() -> bool:
        st = await status(rt_client, "typo", namespace)
        return st.get("lastPassed") is False

    assert await eventually(errored, within=30)
    last = (await status(rt_client, "typo", namespace))["analysis"]["results"][-1]
    assert last["phase"] == "Error"
    missing = (
        "spec.provider: template variable {{.Vars.eksClusterName}} is not defined"
        " (Vars has: clusterName)"
    )
    assert missing in last["message"]


async def test_a_var_no_query_uses_is_warned_and_the_check_runs(
    checks: None, rates: ErrorRates, rt_client: Client, namespace: str
) -> None:
    """An UnusedField Event names the var, as okra lint does; the check still runs."""
    rates.values["web-1-v2"] = 0.01
    obj = check("unused", namespace, rates.url, "h")
    obj["spec"]["vars"] = {"eksClusterName": "web-1-v2", "eksClustreName": "web-1-v2"}
    await rt_client.create(obj)
    said: list[str] = []

    async def warned() -> bool:
        events = (await rt_client.list(EVENT, namespace)).items
        said[:] = [
            e.get("note", "")
            for e in events
            if e.get("reason") == "UnusedField" and e.get("regarding", {}).get("name") == "unused"
        ]
        st = await status(rt_client, "unused", namespace)
        return bool(said) and st.get("lastPassed") is True

    assert await eventually(warned, within=30), said
    assert said == [
        "spec.vars.eksClustreName: no {{.Vars.eksClustreName}} in the check's provider or "
        "query refers to it, so it is not used: remove it, or correct the name where it is used"
    ]
