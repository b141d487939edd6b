"""Argo CD cluster Secret strategies (seed 002) end to end, every link real: okra-manager (a
process), a real Argo CD (repo-server, application-controller, applicationset-controller) on
the management control plane, workload clusters that are further control planes (`fleet`),
moto for the ALB.

The ApplicationSet's cluster generator selects cluster Secrets by `myservice-role: web`; okra
adds and removes that label. A sampler records, in order, when each thing is first seen
(labels on Secrets, Applications and their status, weights in moto), and the tests assert
the order the strategy promises:
- CreateBeforeDelete behind an ALB: new clusters labelled → their Applications Synced and
  Healthy → traffic moves → old clusters unlabelled → their Applications removed by Argo CD.
- DeleteBeforeCreate with no load balancer: old clusters unlabelled → their Applications
  removed → new clusters labelled → Synced and Healthy → the Cell completes.
- DeleteBeforeCreate together with an ALB is refused by the API server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from conftest import Fleet
from okra_runtime import GVK, Client
from okra_runtime.errors import ApiError
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD

from .conftest import CELL, VERSION_LABEL, Env, OkraManager, cell_obj, cell_status

APPLICATION = GVK("argoproj.io", "v1alpha1", "Application")
SECRET = GVK("", "v1", "Secret")
APP_LABEL = {"myservice-role": "web"}
pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def argo(control_plane: ControlPlane, namespace: str) -> Iterator[ArgoCD]:
    """Argo CD whose namespace is the test's (okra reads cluster Secrets and Applications in
    the Cell's namespace), with an ApplicationSet deploying a ConfigMap onto every cluster
    Secret labelled `myservice-role: web`."""
    with ArgoCD(control_plane, namespace=namespace) as a:
        assert a.git is not None
        config_map = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "web"},
            "data": {"app": "web"},
        }
        a.git.commit({"web/configmap.yaml": yaml.safe_dump(config_map)}, "web app")
        a.apply([application_set(a, namespace)])
        yield a


def application_set(
    a: ArgoCD,
    namespace: str,
    name: str = "web",
    selector: dict[str, str] = APP_LABEL,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """ApplicationSet `name`: the git repository's directory `name` onto every cluster Secret
    with the `selector` labels, as Applications `<name>-<cluster>` in `namespace` there;
    `labels` on the ApplicationSet and its Applications."""
    assert a.git is not None
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"clusters": {"selector": {"matchLabels": selector}}}],
            "template": {
                "metadata": {
                    "name": f"{name}-{{{{.name}}}}",
                    "labels": dict(labels or {}),
                    # Background deletion: the workload planes run no garbage collector, which
                    # foreground deletion (the plain finalizer) waits for.
                    "finalizers": ["resources-finalizer.argocd.argoproj.io/background"],
                },
                "spec": {
                    "project": "default",
                    "source": {"repoURL": a.git.url, "path": name, "targetRevision": "main"},
                    "destination": {"server": "{{.server}}", "namespace": namespace},
                    "syncPolicy": {
                        "automated": {"prune": True, "selfHeal": True},
                        "syncOptions": ["CreateNamespace=true"],
                        "retry": {
                            "limit": 10,
                            "backoff": {"duration": "1s", "factor": 2, "maxDuration": "5s"},
                        },
                    },
                },
            },
        },
    }


def argocd_spec(strategy: str) -> dict[str, Any]:
    """Seed 002's shape: `clusterSecret.labels`, `applicationSet.name`, `updateStrategy.type`."""
    return {
        "clusterSecret": {"selector": {"matchLabels": {"role": "web"}}, "labels": APP_LABEL},
        "applicationSet": {"name": "web"},
        "updateStrategy": {"type": strategy},
    }


def register(a: ArgoCD, fleet: Fleet, name: str, version: str, labelled: bool) -> None:
    labels = {"role": "web", VERSION_LABEL: version, **(APP_LABEL if labelled else {})}
    a.register_cluster(name, fleet(name), labels)


class Sampler:
    """Polls the world and records the first time each fact is seen, and checks the
    strategy's ordering at every sample. One sample reads the cluster Secrets, then the
    weights in moto, then the Applications: a fact okra acted on (a label, a weight) is
    read before the fact it waited for (weights, Applications), so a rule "X only once Y"
    is checked as "X seen ⇒ Y seen after it in the same sample" and cannot fail by the
    reads' timing when okra kept to it."""

    def __init__(self, c: Client, ns: str, env: Env | None) -> None:
        self.c, self.ns, self.env = c, ns, env
        self.seen: dict[str, float] = {}
        self.last: dict[str, Any] = {}
        self.rules: list[tuple[str, str]] = []  # (if this fact holds, that one must too)
        self.broken: list[str] = []

    async def sample(self) -> None:
        now: set[str] = set()
        secrets = (await self.c.list(SECRET, self.ns, label_selector="role=web")).items
        for s in secrets:
            cluster = s["metadata"]["name"].removeprefix("cluster-")
            labelled = (s["metadata"].get("labels") or {}).get("myservice-role") == "web"
            now.add(f"{'labelled' if labelled else 'unlabelled'} {cluster}")
        if self.env is not None:
            weights = await self.env.rule_weights()
            now |= {f"traffic {tg}" for tg, w in weights.items() if w > 0}
            if weights and list(weights.values()) == [100]:
                now.add(f"only {next(iter(weights))}")
            self.last["weights"] = weights
        apps = {
            a["metadata"]["name"]: a.get("status") or {}
            for a in (await self.c.list(APPLICATION, self.ns)).items
        }
        for name, st in apps.items():
            now.add(f"app {name}")
            sync = (st.get("sync") or {}).get("status")
            health = (st.get("health") or {}).get("status")
            if sync == "Synced" and health == "Healthy":
                now.add(f"healthy {name}")
        now |= {f"gone {name}" for name in self.last.get("names", ()) if name not in apps}
        now |= {f"no {name}" for name in ("web-lc-1", "web-lc-2", "web-lc-3") if name not in apps}
        self.last["names"] = set(apps) | set(self.last.get("names", ()))
        self.last["apps"] = apps
        self.last["cell"] = await cell_status(self.c, self.ns)
        t = time.monotonic()
        for fact in now:
            self.seen.setdefault(fact, t)
        for if_, then in self.rules:
            if if_ in now and then not in now:
                self.broken.append(f"{if_} without {then}: {sorted(now)}")

    async def until(self, fact: str, within: float = 240) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            await self.sample()
            if fact in self.seen:
                return
            await asyncio.sleep(0.2)
        pytest.fail(
            f"never saw {fact!r}; saw {sorted(self.seen, key=lambda f: self.seen[f])}; {self.last}"
        )

    def order(self, *facts: str) -> None:
        times = [self.seen[f] for f in facts]
        seen = sorted(self.seen.items(), key=lambda kv: kv[1])
        assert times == sorted(times), (sorted(facts, key=lambda f: self.seen[f]), seen)


async def test_create_before_delete_behind_an_alb(
    argo: ArgoCD,
    fleet: Fleet,
    env: Env,
    okra: OkraManager,
    rt_client: Client,
    namespace: str,
) -> None:
    ns = namespace
    register(argo, fleet, "lc-1", "v1", labelled=True)
    await env.target_group("web-a-v1", "v1")
    cell = cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}, {"pause": {"duration": 1}}])
    cell["spec"]["argocd"] = argocd_spec("CreateBeforeDelete")
    await rt_client.create(cell)
    s = Sampler(rt_client, ns, env)
    await s.until("healthy web-lc-1")
    await s.until("traffic web-a-v1")

    # v2: a new cluster and its target group. Nothing moves until Argo CD has deployed it.
    s.rules = [
        ("traffic web-a-v2", "healthy web-lc-2"),  # no traffic before Argo CD deployed v2
        ("unlabelled lc-1", "only web-a-v2"),  # v1 keeps the app until v2 has completed
    ]
    register(argo, fleet, "lc-2", "v2", labelled=False)
    await env.target_group("web-a-v2", "v2")
    await s.until("labelled lc-2")
    await s.until("traffic web-a-v2")
    await s.until("unlabelled lc-1")
    await s.until("gone web-lc-1")
    assert s.broken == []
    s.order("labelled lc-2", "healthy web-lc-2", "traffic web-a-v2", "unlabelled lc-1")
    # Argo CD removes web-lc-1 because okra unlabelled lc-1; no order check between the two:
    # a sample reads the Secrets before the Applications, so it can see the removal one
    # sample before the label change that caused it.
    assert await env.rule_weights() == {"web-a-v2": 100}
    st = await cell_status(rt_client, ns)
    assert st["stableVersion"] == "v2"
    # Argo CD removed the app from the old cluster too (the Application's resources finalizer).
    async with await Client.from_kubeconfig(fleet("lc-1").kubeconfig()) as c:

        async def deleted() -> bool:
            return not [
                m
                for m in (await c.list(GVK("", "v1", "ConfigMap"), ns)).items
                if m["metadata"]["name"] == "web"
            ]

        deadline = time.monotonic() + 60
        while not await deleted():
            assert time.monotonic() < deadline, "the ConfigMap stayed on the old cluster"
            await asyncio.sleep(0.5)


async def test_delete_before_create_with_no_load_balancer(
    argo: ArgoCD,
    fleet: Fleet,
    env: Env,
    okra: OkraManager,
    rt_client: Client,
    namespace: str,
) -> None:
    ns = namespace
    register(argo, fleet, "lc-1", "v1", labelled=False)
    cell = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"argocd": argocd_spec("DeleteBeforeCreate")},
    }
    await rt_client.create(cell)
    s = Sampler(rt_client, ns, None)
    await s.until("healthy web-lc-1")

    async def healthy(version: str) -> bool:
        st = await cell_status(rt_client, ns)
        return st.get("stableVersion") == version and st.get("health") == "Healthy"

    deadline = time.monotonic() + 60
    while not await healthy("v1"):
        assert time.monotonic() < deadline, await cell_status(rt_client, ns)
        await asyncio.sleep(0.2)

    s.rules = [("labelled lc-3", "no web-lc-1")]  # v2 gets the app only once v1's is gone
    register(argo, fleet, "lc-3", "v2", labelled=False)
    await s.until("unlabelled lc-1")
    await s.until("healthy web-lc-3")
    assert s.broken == []
    s.order(
        "gone web-lc-1", "healthy web-lc-3"
    )  # (the removal may show a sample before the label change)
    s.order("unlabelled lc-1", "labelled lc-3", "healthy web-lc-3")
    deadline = time.monotonic() + 60
    while not await healthy("v2"):
        assert time.monotonic() < deadline, await cell_status(rt_client, ns)
        await asyncio.sleep(0.2)


async def test_delete_before_create_with_an_alb_is_refused(
    env: Env, rt_client: Client, namespace: str
) -> None:
    cell = cell_obj(namespace, env.alb.listener_arn, [])
    cell["spec"]["argocd"] = argocd_spec("DeleteBeforeCreate")
    with pytest.raises(ApiError) as e:
        await rt_client.create(cell)
    assert "DeleteBeforeCreate is for apps with no load balancer" in str(e.value)
    cell["spec"]["argocd"] = argocd_spec("CreateBeforeDelete")
    await rt_client.create(cell)
    assert (await rt_client.get(CELL, "web", namespace))["spec"]["argocd"]["updateStrategy"] == {
        "type": "CreateBeforeDelete"
    }
