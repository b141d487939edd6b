"""`okra freeze`, `okra get freezes`, `okra unfreeze` as processes against a real
kube-apiserver: what they write, what they print, what they refuse."""

from __future__ import annotations

import contextlib
import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from integration.test_cli import okra, world  # noqa: F401 (world: a fixture)
from okra_controllers.api.kinds import CLUSTER_FREEZE, FREEZE, NAMESPACE
from okra_runtime import Client
from okra_runtime.errors import NotFoundError
from okra_testkit.envtest import UNPRIVILEGED, ControlPlane

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


async def test_cluster_wide_freeze_get_unfreeze(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    """`okra freeze --cluster-wide` writes a ClusterFreeze; `okra get freezes` lists it
    beside the namespace's Freezes in the namespaces it selects, not elsewhere; `okra
    unfreeze --cluster-wide` lifts it. Its namespaceSelector names this test's namespace
    only: ClusterFreezes reach every test sharing the control plane."""
    ns = namespace
    other = f"{ns}-x"
    await rt_client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    name = f"cf-{ns}"
    try:
        code, out, err = await okra(
            control_plane,
            ns,
            "freeze",
            "--cluster-wide",
            "--namespace-selector",
            f"kubernetes.io/metadata.name={ns}",
            "--reason",
            "year-end",
            "--name",
            name,
        )
        assert (code, err) == (0, ""), err
        assert out == (
            f"clusterfreeze {name} in namespaces kubernetes.io/metadata.name={ns} "
            "(every Cell and ProgressiveRollout) until okra unfreeze: year-end\n"
        )
        made = await rt_client.get(CLUSTER_FREEZE, name)
        assert "namespace" not in made["metadata"]
        assert made["spec"]["namespaceSelector"] == {
            "matchLabels": {"kubernetes.io/metadata.name": ns}
        }
        assert made["spec"]["author"] == "admin"
        code, out, err = await okra(
            control_plane, ns, "freeze", "--reason", "incident", "--name", "incident"
        )
        assert (code, err) == (0, ""), err

        code, out, err = await okra(control_plane, ns, "get", "freezes")
        assert (code, err) == (0, ""), err
        lines = out.splitlines()
        assert lines[0].split()[:3] == ["NAMESPACE", "NAME", "ACTIVE"]
        assert lines[1].split()[:4] == [ns, "incident", "yes", "lifted"]
        assert lines[2].split()[:4] == [
            f"kubernetes.io/metadata.name={ns}",
            f"clusterfreeze/{name}",
            "yes",
            "lifted",
        ]
        code, out, _ = await okra(control_plane, ns, "get", "freezes", "-o", "name")
        assert out == f"freeze/incident\nclusterfreeze/{name}\n"
        code, out, _ = await okra(control_plane, ns, "get", "freezes", "-o", "json")
        rows = json.loads(out)
        assert [(r["kind"], r["name"], r["namespaces"]) for r in rows] == [
            ("Freeze", "incident", ""),
            ("ClusterFreeze", name, f"kubernetes.io/metadata.name={ns}"),
        ]
        # in a namespace it does not select, it is not listed
        code, out, err = await okra(control_plane, other, "get", "freezes")
        assert (code, out) == (0, "")
        assert err == f"No Freezes found in namespace {other}.\n"
        # -A lists it whatever it selects
        code, out, _ = await okra(control_plane, other, "get", "freezes", "-A", "-o", "name")
        assert f"clusterfreeze/{name}\n" in out

        code, _, err = await okra(
            control_plane, ns, "freeze", "--namespace-selector", "a=b", "--reason", "x"
        )
        assert code == 1
        assert "--namespace-selector: only with --cluster-wide" in err
        code, _, err = await okra(control_plane, ns, "unfreeze", "--cluster-wide", "nope")
        assert (code, err) == (1, "error: no ClusterFreeze nope in the cluster\n")
        code, out, err = await okra(control_plane, ns, "unfreeze", "--cluster-wide", name)
        assert (code, out, err) == (0, f"clusterfreeze {name} lifted\n", "")
        code, out, _ = await okra(control_plane, ns, "get", "freezes", "-o", "name")
        assert out == "freeze/incident\n"
    finally:
        with contextlib.suppress(NotFoundError):
            await rt_client.delete(CLUSTER_FREEZE, name)
        await rt_client.delete(NAMESPACE, other)


async def test_get_freezes_says_when_cluster_freezes_are_not_readable(
    control_plane: ControlPlane, rt_client: Client, namespace: str, okra_crds: list[str]
) -> None:
    """A user who may read the namespace's Freezes but not ClusterFreezes gets the Freezes
    and a word about the ClusterFreezes."""
    rbac = "rbac.authorization.k8s.io/v1"
    meta = {"name": "freeze-reader", "namespace": namespace}
    await rt_client.create(
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": meta,
            "rules": [{"apiGroups": ["okra.mumo.co"], "resources": ["freezes"], "verbs": ["list"]}],
        }
    )
    await rt_client.create(
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": meta["name"],
            },
            "subjects": [
                {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}
            ],
        }
    )
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Freeze",
            "metadata": {"name": "incident", "namespace": namespace},
            "spec": {"reason": "incident"},
        }
    )
    code, out, err = await okra(
        control_plane, namespace, "get", "freezes", "-o", "name", user=UNPRIVILEGED
    )
    assert (code, out) == (0, "freeze/incident\n"), err
    assert err == "ClusterFreezes: not readable by this user (okra-viewer bound cluster-wide)\n"


@pytest.mark.usefixtures("world")  # test_cli's Cell web, rolling out v2
async def test_plan_shows_the_cluster_freeze_that_holds_the_cell(
    control_plane: ControlPlane, rt_client: Client, namespace: str
) -> None:
    """`okra plan` holds the Cell as the controller would: a ClusterFreeze that selects its
    namespace by label is read with the Namespace's labels, and named."""
    ns = namespace
    name = f"cf-{ns}"
    await rt_client.patch(NAMESPACE, ns, {"metadata": {"labels": {"okra-test/fleet": ns}}})
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "ClusterFreeze",
            "metadata": {"name": name},
            "spec": {
                "reason": "year-end",
                "namespaceSelector": {"matchLabels": {"okra-test/fleet": ns}},
            },
        }
    )
    try:
        code, out, err = await okra(control_plane, ns, "plan", "web", "--no-aws")
        assert (code, err) == (0, ""), err
        assert f"clusterfreeze {name} (year-end) until lifted" in out, out
        # the namespace leaves the fleet: the plan walks the rollout to its end
        await rt_client.patch(NAMESPACE, ns, {"metadata": {"labels": {"okra-test/fleet": None}}})
        code, out, _ = await okra(control_plane, ns, "plan", "web", "--no-aws")
        assert "clusterfreeze" not in out
        assert "Result:   v2 serves 100%" in out
    finally:
        with contextlib.suppress(NotFoundError):
            await rt_client.delete(CLUSTER_FREEZE, name)
