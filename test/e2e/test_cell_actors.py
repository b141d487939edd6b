"""Who acted, as the API server proves it: on a control plane of its own with two token
users (alice, bob) who may edit okra's kinds in a namespace, okra's admission policy
(`config/rbac/actor_policy.yaml`) installed or not, and okra-manager (a real process)
recording a Cell's rollout.

- with the policy, `okra promote` as alice is recorded as by alice, and the API server
  refuses alice's write of an actor annotation naming bob, with a message naming it;
- without the policy, the same forged annotation is accepted, and the record says unknown.

The plane is this module's own: the policy is cluster-wide, and other tests' Cells must not
depend on whether it is there. Each test installs or removes it first, so they pass alone
and in any order."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from integration.test_cli import okra as okra_cli
from okra_controllers.actors import ACTOR, ACTOR_ACTION
from okra_runtime import Client
from okra_runtime.errors import ApiError
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.controlplane import User
from support import api_client, eventually, fresh_namespace

from .conftest import CELL, REPO, Env, OkraManager, cell_obj, wait_status, world

ALICE, BOB = "alice", "bob"
POLICY_FILE = REPO / "config" / "rbac" / "actor_policy.yaml"
PROMOTE = "okra.mumo.co/promote"


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with ControlPlane(
        name="actors", extra_users=(User(ALICE), User(BOB)), controller_manager=False
    ) as cp:
        cp.install_crds([REPO / "config" / "crd" / "bases"])
        yield cp


def policy(cp: ControlPlane, present: bool) -> None:
    """okra's policy and binding installed (as `kubectl apply -k config/default` does) or
    removed."""
    if present:
        cp.kubectl("apply", "--server-side", "-f", str(POLICY_FILE))
    else:
        cp.kubectl("delete", "--ignore-not-found", "-f", str(POLICY_FILE))


def editor_role(ns: str) -> list[dict[str, Any]]:
    """A Role for alice and bob: what `okra promote` and `okra history` read and write."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "okra-editor", "namespace": ns},
            "rules": [
                {
                    "apiGroups": ["okra.mumo.co"],
                    "resources": ["cells", "pauses", "versionblocklists", "awstargetgroups"],
                    "verbs": ["get", "list", "watch", "create", "patch", "update"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "okra-editor", "namespace": ns},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "okra-editor",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}
                for u in (ALICE, BOB)
            ],
        },
    ]


@pytest.fixture
async def admin(plane: ControlPlane) -> AsyncIterator[Client]:
    c = await Client.from_kubeconfig(plane.kubeconfig())
    async with c:
        yield c


@pytest.fixture
async def ns(plane: ControlPlane, admin: Client) -> AsyncIterator[str]:
    api = await api_client(plane)
    async with api, fresh_namespace(api) as name:
        for obj in editor_role(name):
            await admin.create(obj)
        yield name


@pytest.fixture
async def env(moto: MotoServer, admin: Client, ns: str) -> AsyncIterator[Env]:
    async with world(moto, admin, ns) as e:
        yield e


@pytest.fixture
def manager(plane: ControlPlane, env: Env, tmp_path: Path) -> Iterator[OkraManager]:
    with OkraManager(plane, env, tmp_path / "okra-manager.log") as m:
        yield m


async def as_user(cp: ControlPlane, user: str) -> Client:
    return await Client.from_kubeconfig(cp.kubeconfig(user))


async def okra(cp: ControlPlane, ns: str, user: str, *args: str) -> tuple[int, str, str]:
    """The CLI run as `user` (test_cli's runner)."""
    return await okra_cli(cp, ns, *args, user=user)


async def paused_rollout(env: Env, admin: Client, ns: str) -> dict[str, Any]:
    """A Cell web whose rollout of v2 holds at its indefinite pause: its status."""
    await env.target_group("web-v1", "v1")
    steps: list[dict[str, Any]] = [{"setWeight": 20}, {"pause": {}}]
    await admin.create(cell_obj(ns, env.alb.listener_arn, steps))
    await wait_status(admin, ns, lambda s: s.get("health") == "Healthy")
    await env.target_group("web-v2", "v2")
    return await wait_status(
        admin, ns, lambda s: s.get("health") == "Paused" and s.get("pausedReason") == "Pause"
    )


def promoted(st: dict[str, Any], rollout: str) -> dict[str, Any]:
    (record,) = [r for r in st.get("history") or [] if r["rolloutId"] == rollout]
    (event,) = [e for e in record["events"] if e["reason"] == "Promoted"]
    assert isinstance(event, dict)
    return event


async def test_alice_promotes_and_the_record_says_alice(
    plane: ControlPlane, admin: Client, ns: str, env: Env, manager: OkraManager
) -> None:
    policy(plane, present=True)
    st = await paused_rollout(env, admin, ns)
    rid = st["rolloutId"]
    code, out, err = await okra(plane, ns, ALICE, "promote", "web")
    assert code == 0, (out, err)
    cell = await admin.get(CELL, "web", ns)
    assert cell["metadata"]["annotations"][ACTOR] == ALICE
    assert cell["metadata"]["annotations"][ACTOR_ACTION].startswith(f"promote={rid}/1 ")
    st = await wait_status(admin, ns, lambda s: s.get("stableVersion") == "v2")
    event = promoted(st, rid)
    assert event["user"] == ALICE, manager.tail()
    code, out, _ = await okra(plane, ns, ALICE, "history", "cell", "web", rid)
    assert code == 0
    assert "Promoted by alice: okra promote at step 2" in out, out
    code, out, _ = await okra(plane, ns, BOB, "history", "cell", "web", rid, "-o", "yaml")
    record = yaml.safe_load(out)
    assert [e["user"] for e in record["events"] if e["reason"] == "Promoted"] == [ALICE]


async def written(c: Client, ns: str, annotations: dict[str, str | None]) -> ApiError | None:
    """Patch the Cell web's annotations as `c`'s user: the API server's refusal, if any."""
    try:
        await c.patch(CELL, "web", {"metadata": {"annotations": annotations}}, namespace=ns)
    except ApiError as e:
        return e
    return None


async def test_the_api_server_refuses_an_actor_that_is_not_the_writer(
    plane: ControlPlane, admin: Client, ns: str
) -> None:
    policy(plane, present=True)
    await admin.create(cell_obj(ns, "arn:aws:elasticloadbalancing:us-east-1:1:listener/x", []))
    forged: dict[str, str | None] = {ACTOR: BOB, ACTOR_ACTION: "promote=r1/0 t1"}
    gone: dict[str, str | None] = {ACTOR: None, ACTOR_ACTION: None}
    alice, bob = await as_user(plane, ALICE), await as_user(plane, BOB)
    async with alice, bob:

        async def refused() -> bool:  # once the API server has loaded the policy
            if await written(alice, ns, forged) is not None:
                return True
            assert await written(admin, ns, gone) is None
            return False

        assert await eventually(refused, within=30, interval=0.5)
        e = await written(alice, ns, forged)
        assert e is not None
        assert e.status == 403, e
        assert f"{ACTOR} bob is not the user making this request (alice)" in e.message, e
        # on create too
        cell = cell_obj(ns, "arn:aws:elasticloadbalancing:us-east-1:1:listener/x", [])
        cell["metadata"] = {"name": "web2", "namespace": ns, "annotations": forged}
        with pytest.raises(ApiError, match=r"okra\.mumo\.co/actor bob is not the user"):
            await alice.create(cell)
        # each may name themself, and write beside an actor another wrote, leaving it as it is
        assert await written(alice, ns, {ACTOR: ALICE, ACTOR_ACTION: "promote=r1/0 t2"}) is None
        assert await written(bob, ns, {PROMOTE: "r1/0"}) is None
        # but not change it without naming themself
        e = await written(bob, ns, {ACTOR_ACTION: "promote=r1/1 t3"})
        assert e is not None
        assert "okra.mumo.co/actor alice is not the user" in e.message, e
        e = await written(bob, ns, {ACTOR: None})
        assert e is not None
        assert "okra.mumo.co/actor (unset) is not the user" in e.message, e
        # removing both credits nobody: anyone may
        assert await written(bob, ns, gone) is None


async def test_without_the_policy_the_record_says_unknown(
    plane: ControlPlane, admin: Client, ns: str, env: Env, manager: OkraManager
) -> None:
    policy(plane, present=False)
    st = await paused_rollout(env, admin, ns)
    rid = st["rolloutId"]
    # nothing stops alice naming bob now (once the API server has dropped the policy), which
    # is why okra credits nobody
    forged: dict[str, str | None] = {
        PROMOTE: f"{rid}/1",
        ACTOR: BOB,
        ACTOR_ACTION: f"promote={rid}/1 t1",
    }
    alice = await as_user(plane, ALICE)
    async with alice:

        async def accepted() -> bool:
            return await written(alice, ns, forged) is None

        assert await eventually(accepted, within=30, interval=0.5)
    st = await wait_status(admin, ns, lambda s: s.get("stableVersion") == "v2")
    assert promoted(st, rid)["user"] == "unknown", manager.tail()
    code, out, _ = await okra(plane, ns, ALICE, "history", "cell", "web", rid)
    assert code == 0
    assert "Promoted by unknown: okra promote at step 2" in out, out
