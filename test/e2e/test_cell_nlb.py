"""Cells behind an NLB end to end: okra-manager (a real process) on the real control
plane, moto for AWS; the listener's default action is read back from AWS at each hold
point. BlueGreen (seed 000's manifest, spelling included): analysis while the old version
serves everything, then one switch; a failed analysis leaves the old version serving and
blocks the new one. Weighted canary on the NLB listener (moto accepts weighted forwards
on NLB listeners, as AWS has since November 2025)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from okra_runtime import GVK, Client
from okra_testkit.awsread import listener_forward
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.seed import LoadBalancer, Seeder
from support import eventually, wait_events

from .conftest import (
    BLOCKLIST,
    CELL,
    RUN,
    VERSION_ARG,
    VERSION_LABEL,
    Env,
    Metrics,
    OkraManager,
    error_rate_template,
    wait_status,
)
from .test_cli_plan import okra_cli

NLB_CONFIG = GVK("okra.mumo.co", "v1alpha1", "AWSNetworkLoadBalancerConfig")
ANALYSIS = {"analysis": {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}}


@dataclass
class NlbEnv:
    env: Env
    nlb: LoadBalancer
    tg_arns: dict[str, str] = field(default_factory=dict)

    async def target_group(self, name: str, version: str) -> None:
        e = self.env
        arn = await e.aws.target_group(
            f"{name}-{e.namespace[-6:]}"[:32], e.network, protocol="TCP", target_type="ip"
        )
        await e.aws.register_targets(arn, ["10.0.0.10"], port=80)
        await e.client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": name,
                    "namespace": e.namespace,
                    "labels": {"role": "web", VERSION_LABEL: version},
                },
                "spec": {"arn": arn},
            }
        )
        self.tg_arns[name] = arn

    async def listener_weights(self) -> dict[str, int]:
        """The listener's default forward, by target group name, weights above 0."""
        by_arn = {a: n for n, a in self.tg_arns.items()}
        shown = await listener_forward(self.env.aws.config, self.nlb.listener_arn)
        return {by_arn.get(arn, arn): w for arn, w in shown.items()}


@pytest.fixture
async def nlb_env(
    moto: MotoServer, rt_client: Client, namespace: str, okra_crds: list[str]
) -> AsyncIterator[NlbEnv]:
    proxy = CountingProxy(moto.endpoint_url)
    await proxy.start()
    seed = Seeder(moto.config)
    network = await seed.network()
    placeholder = await seed.target_group(
        f"none-{namespace[-8:]}", network, protocol="TCP", target_type="ip"
    )
    nlb = await seed.nlb(f"tcp-{namespace[-8:]}", network, placeholder)
    alb = await seed.alb(f"web-{namespace[-8:]}", network)
    yield NlbEnv(Env(rt_client, seed, namespace, network, alb, proxy), nlb)
    await proxy.stop()


@pytest.fixture
def env(nlb_env: NlbEnv) -> Env:
    """What the shared `okra` fixture runs okra-manager against."""
    return nlb_env.env


def nlb_cell(ns: str, listener: str, strategy: dict[str, Any], key: str) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "ingress": {
                "type": "AWSNetworkLoadBalancer",
                key: {
                    "listenerARN": listener,
                    "targetGroupSelector": {"matchLabels": {"role": "web"}},
                },
            },
            "updateStrategy": strategy,
        },
    }


async def wait_weights(n: NlbEnv, want: dict[str, int], within: float = 30) -> None:
    async def same() -> bool:
        return await n.listener_weights() == want

    assert await eventually(same, within=within), (await n.listener_weights(), want)


async def test_blue_green_analysis_then_switch_and_a_failed_version_is_blocked(
    nlb_env: NlbEnv, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    n, ns = nlb_env, namespace
    await rt_client.create(error_rate_template(ns, metrics.url))
    await n.target_group("web-a-v1", "v1")
    await n.target_group("web-b-v1", "v1")
    # Seed 000's NLB manifest: the listener under `awsApplicationLoadBalancer`.
    strategy = {"type": "BlueGreen", "blueGreen": {"steps": [ANALYSIS, {"promote": {}}]}}
    await rt_client.create(
        nlb_cell(ns, n.nlb.listener_arn, strategy, key="awsApplicationLoadBalancer")
    )

    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await wait_weights(n, {"web-a-v1": 50, "web-b-v1": 50})
    misplaced = await wait_events(rt_client, ns, "MisplacedListener")
    assert misplaced[0]["type"] == "Warning"
    assert "spec.ingress.awsNetworkLoadBalancer" in misplaced[0]["note"]

    # v2: analysed while v1 serves everything, then switched at once. The
    # analysis is held open until the test has read the listener (its 1 s
    # interval is shorter than a busy machine's gap between two reads).
    metrics.hold("v2")
    await n.target_group("web-a-v2", "v2")
    await n.target_group("web-b-v2", "v2")

    async def run_started() -> bool:
        return bool((await rt_client.list(RUN, ns)).items)

    assert await eventually(run_started, within=30)
    assert await n.listener_weights() == {"web-a-v1": 50, "web-b-v1": 50}
    metrics.release("v2")
    st = await wait_status(
        rt_client, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2"
    )
    await wait_weights(n, {"web-a-v2": 50, "web-b-v2": 50})
    assert {t["name"]: t["weight"] for t in st["targetGroups"]} == {
        "web-a-v2": 50,
        "web-b-v2": 50,
    }
    nlb_config = await rt_client.get(NLB_CONFIG, "web", ns)
    assert {t["name"] for t in nlb_config["status"]["applied"]["forwardTargetGroups"]} == {
        "web-a-v2",
        "web-b-v2",
    }

    # v3 fails its analysis: v2 keeps serving, v3 never gets traffic and is blocked.
    metrics.rates["v3"] = 0.5
    await n.target_group("web-a-v3", "v3")
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded")
    assert "version v3 failed" in st["message"]
    assert st["stableVersion"] == "v2"
    await wait_weights(n, {"web-a-v2": 50, "web-b-v2": 50})
    blocked = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocked["spec"]["items"]] == ["v3"]
    async with n.env.aws.config.client("elbv2") as elb:  # AWS never saw v3 in the forward
        listener = (await elb.describe_listeners(ListenerArns=[n.nlb.listener_arn]))["Listeners"][0]
    assert n.tg_arns["web-a-v3"] not in str(listener["DefaultActions"])


async def test_weighted_canary_on_an_nlb_listener(
    nlb_env: NlbEnv, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    n, ns = nlb_env, namespace
    await n.target_group("web-a-v1", "v1")
    strategy = {"type": "Canary", "canary": {"steps": [{"setWeight": 30}, {"pause": {}}]}}
    await rt_client.create(nlb_cell(ns, n.nlb.listener_arn, strategy, key="awsNetworkLoadBalancer"))
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await wait_weights(n, {"web-a-v1": 100})

    await n.target_group("web-a-v2", "v2")
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Paused")
    await wait_weights(n, {"web-a-v1": 70, "web-a-v2": 30})
    assert st["canaryWeight"] == 30
    # okra plan reads the listener's default action: what AWS forwards is the config.
    code, out, err = await okra_cli(okra.cp, n.env, "plan", "web", "-o", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert {f["name"]: f["weight"] for f in plan["aws"]["forward"]} == {
        "web-a-v1": 70,
        "web-a-v2": 30,
    }
    assert plan["aws"]["matchesConfig"] is True
    writes = [{w["name"]: w["weight"] for w in s["writes"]} for s in plan["stages"] if s["writes"]]
    assert writes == [{"web-a-v2": 100}]  # after the pause: all on v2, v1 leaves the forward

    await rt_client.patch(
        CELL,
        "web",
        {"metadata": {"annotations": {"okra.mumo.co/promote": f"{st['rolloutId']}/full"}}},
        namespace=ns,
    )
    await wait_status(
        rt_client, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2"
    )
    await wait_weights(n, {"web-a-v2": 100})


async def test_plan_and_get_cell_read_the_nlb_config_and_listener(
    nlb_env: NlbEnv, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    """`okra get cell` and `okra plan` on a BlueGreen Cell behind an NLB, held at its
    analysis: the AWSNetworkLoadBalancerConfig's state, the BlueGreen steps, and the
    listener's default action read from AWS (DescribeListeners only)."""
    n, ns = nlb_env, namespace
    slow = error_rate_template(ns, metrics.url, name="slow")
    slow["spec"]["metrics"][0]["count"] = 1000  # one measurement a second: never done here
    await rt_client.create(slow)
    await n.target_group("web-a-v1", "v1")
    step = {"analysis": {"templates": [{"templateName": "slow"}], "args": VERSION_ARG}}
    strategy = {"type": "BlueGreen", "blueGreen": {"steps": [step, {"promote": {}}]}}
    await rt_client.create(nlb_cell(ns, n.nlb.listener_arn, strategy, key="awsNetworkLoadBalancer"))
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await wait_weights(n, {"web-a-v1": 100})
    await n.target_group("web-a-v2", "v2")

    async def analysing() -> bool:
        return bool((await rt_client.list(RUN, ns)).items)

    assert await eventually(analysing, within=30)

    code, out, err = await okra_cli(okra.cp, n.env, "get", "cell", "web")
    assert code == 0, err
    assert "AWSNetworkLoadBalancerConfig web: Synced" in out, out
    assert "AWSApplicationLoadBalancerConfig" not in out
    assert "BlueGreen 1/2" in out, out
    assert "analysis slow" in out
    assert "promote: all traffic to the new version" in out

    since = time.monotonic()
    code, out, err = await okra_cli(okra.cp, n.env, "plan", "web", "-o", "json")
    assert code == 0, err
    calls = n.env.proxy.actions(since)
    assert set(calls) <= {"DescribeListeners", "DescribeTargetHealth"}, calls
    plan = json.loads(out)
    assert plan["aws"]["listenerARN"] == n.nlb.listener_arn
    assert {f["name"]: f["weight"] for f in plan["aws"]["forward"]} == {"web-a-v1": 100}
    assert plan["aws"]["matchesConfig"] is True
    assert plan["desiredVersion"] == "v2"
    assert (plan["finished"], plan["resultVersion"]) == (True, "v2")
    writes = [{w["name"]: w["weight"] for w in s["writes"]} for s in plan["stages"] if s["writes"]]
    assert writes == [{"web-a-v2": 100}]
    code, text, _ = await okra_cli(okra.cp, n.env, "plan", "web")
    assert "AWS:      the listener's default action forwards web-a-v1=100" in text, text
    assert "at step 2/2: promote: all traffic to the new version" in text, text
