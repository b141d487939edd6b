"""`okra freeze`, `okra get freezes`, `okra unfreeze` as processes against a real
kube-apiserver: what they write, what they print, what they refuse."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from integration.test_cli import okra
from okra_controllers.api.kinds import FREEZE
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def okra_crds(control_plane: ControlPlane) -> list[str]:
    return control_plane.install_crds([REPO / "config" / "crd" / "bases"])


async def freezes(c: Client, ns: str) -> list[dict[str, Any]]:
    return (await c.list(FREEZE, ns)).items


async def test_freeze_get_unfreeze(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    ns = namespace
    code, out, err = await okra(
        control_plane,
        ns,
        "freeze",
        "--reason",
        "INC-42: checkout errors",
        "-l",
        "team=web,tier!=db",
        "--until",
        "2h",
        "--name",
        "incident",
    )
    assert (code, err) == (0, ""), err
    [made] = await freezes(rt_client, ns)
    spec = made["spec"]
    assert spec["reason"] == "INC-42: checkout errors"
    assert spec["author"] == "admin"  # the user the API server says this is
    assert spec["selector"] == {
        "matchLabels": {"team": "web"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
    }
    until = datetime.datetime.fromisoformat(spec["until"].replace("Z", "+00:00"))
    left = until - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(minutes=118) < left <= datetime.timedelta(hours=2)
    assert out == (
        f"freeze incident in {ns} (-l team=web,tier!=db) until {spec['until']}: "
        "INC-42: checkout errors\n"
    )
    # a recurring one beside it, written as a user would
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Freeze",
            "metadata": {"name": "weekend", "namespace": ns},
            "spec": {
                "reason": "weekends",
                "windows": [{"schedule": "0 18 * * 5", "duration": "62h", "timeZone": "UTC"}],
                "start": "2099-01-01T00:00:00Z",
            },
        }
    )
    code, out, err = await okra(control_plane, ns, "get", "freezes")
    assert (code, err) == (0, "")
    rows = [line.split("  ") for line in out.splitlines()]
    assert out.splitlines()[0].split() == [
        "NAME",
        "ACTIVE",
        "UNTIL",
        "REASON",
        "AUTHOR",
        "SELECTOR",
        "WINDOWS",
    ]
    assert out.splitlines()[1].startswith("incident  yes     " + spec["until"])
    assert "weekend   no      next 2099-01-02T18:00:00Z  weekends" in out, rows
    code, out, _ = await okra(control_plane, ns, "get", "freezes", "-o", "json")
    by_name = {r["name"]: r for r in json.loads(out)}
    assert by_name["weekend"]["windows"] == "0 18 * * 5 for 62h (UTC)"
    assert by_name["incident"]["selector"] == "team=web,tier NotIn (db)"

    # unfreeze needs a name when there are two; then lifts the one named
    code, _, err = await okra(control_plane, ns, "unfreeze")
    assert code == 1
    assert err == f"error: okra unfreeze NAME: namespace {ns} has 2 Freezes (incident, weekend)\n"
    code, out, err = await okra(control_plane, ns, "unfreeze", "incident")
    assert (code, out, err) == (0, "freeze incident lifted\n", "")
    assert [f["metadata"]["name"] for f in await freezes(rt_client, ns)] == ["weekend"]
    code, out, _ = await okra(control_plane, ns, "unfreeze")
    assert (code, out) == (0, "freeze weekend lifted\n")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--until", "yesterday"], "--until 'yesterday': neither a time"),
        (["--until", "2001-01-01T00:00:00Z"], "is not in the future"),
        (["-l", "team=(web"], "-l: invalid label selector"),
    ],
)
async def test_freeze_refuses_bad_input_naming_the_flag(
    control_plane: ControlPlane, namespace: str, okra_crds: list[str], args: list[str], said: str
) -> None:
    code, out, err = await okra(control_plane, namespace, "freeze", "--reason", "x", *args)
    assert (code, out) == (1, "")
    assert said in err
    assert "Traceback" not in err


async def test_api_server_refuses_a_bad_window_naming_the_field(
    rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    from okra_runtime import InvalidError

    with pytest.raises(InvalidError) as e:
        await rt_client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "Freeze",
                "metadata": {"name": "bad", "namespace": namespace},
                "spec": {
                    "reason": "x",
                    "windows": [{"schedule": "every friday", "duration": "2 days"}],
                },
            }
        )
    assert "spec.windows[0].schedule" in e.value.message
    assert "spec.windows[0].duration" in e.value.message
