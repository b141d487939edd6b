"""A system Cell whose applications sit behind each traffic backend, on a real control
plane with EKS, the load balancers and Route 53 in moto (the harness of
`test_system_cell`): web behind a rule of the shared ALB, tcp behind an NLB listener
(weighted canary), dns behind Route 53 weighted records (one ALB per cluster, the zone in
another account reached through an assumed role, a TTL). The system moves to a new set of
clusters; what AWS shows for each backend (the rule, the listener's default forward, the
records) is read back while it walks, and must walk as planned: web 0 -> 50 -> 100, dns
0 -> 25 -> 50 -> 75 -> 100 with each step only after the last one's records are in effect
(INSYNC + TTL), tcp 0 -> 50 and back to 0, since its check fails on its new cluster; web and
dns complete all the same. The clusters are named apart from test_system_cell's (EKS in moto
is shared by the tests)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from integration.test_cli import okra as okra_cli
from integration.test_system_cell import (  # noqa: F401 (fixtures)
    CELL,
    System,
    application,
    rates,
    running,
    world,
)
from okra_controllers.aws.config import AwsConfig
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import LoadBalancer
from support import ErrorRates, eventually

# Above the sum of its own waits (120 s to the first Completed, 180 s for the walk, and the
# setup): a wait that runs out then reports okra's state, not pytest's bare timeout
pytestmark = pytest.mark.timeout(420)
ROLE_B = "arn:aws:iam::222222222222:role/okra-dns"
TTL = 4
NAME = "dns.sys.example.test"


@dataclass
class Edge:
    nlb: LoadBalancer
    zone: str
    zone_config: AwsConfig  # account B, where the zone is


@pytest.fixture
async def edge(world: tuple[System, LoadBalancer]) -> Edge:  # noqa: F811
    """An NLB (its listener forwarding to a placeholder until okra writes its default
    action) and a hosted zone in account B."""
    s, _ = world
    placeholder = await s.seed.target_group(f"none-{s.ns[-8:]}", s.network, protocol="TCP")
    nlb = await s.seed.nlb(f"tcp-{s.ns[-8:]}", s.network, placeholder)
    zone_config = s.eks.config.assuming(ROLE_B)
    async with zone_config.client("route53") as r53:
        out = await r53.create_hosted_zone(Name="sys.example.test", CallerReference=s.ns)
    return Edge(nlb, str(out["HostedZone"]["Id"]).rsplit("/", 1)[-1], zone_config)


def behind(app: dict[str, Any], backend: str, settings: dict[str, Any]) -> dict[str, Any]:
    """`app` (an `application`) with its `alb` replaced by `backend` (`nlb`, `route53`):
    the same clusters, checks and steps."""
    alb = app.pop("alb")
    return app | {
        backend: settings
        | {
            "targetGroup": alb["forwardConfig"]["targetGroup"],
            "updateStrategy": alb["updateStrategy"],
        }
    }


def walk(states: list[dict[str, int]]) -> list[int]:
    """The share of the new clusters (`-v2`) each state gives, from 0, each change once."""
    shares = [0]
    for state in states:
        share = sum(w for name, w in state.items() if name.endswith("-v2"))
        if share != shares[-1]:
            shares.append(share)
    return shares


async def test_alb_nlb_and_route53_applications_move_and_a_failing_nlb_check_rolls_only_it_back(
    world: tuple[System, LoadBalancer],  # noqa: F811
    edge: Edge,
    rt_client: Client,
    namespace: str,
    rates: ErrorRates,  # noqa: F811
    control_plane: ControlPlane,
) -> None:
    s, alb = world
    v1 = [
        await s.cluster("www-1-v1", "web"),
        await s.cluster("www-2-v1", "web"),
        await s.cluster("tcp-v1", "tcp", backend="nlb"),
        await s.cluster("dns-1-v1", "dns", backend="route53"),
        await s.cluster("dns-2-v1", "dns", backend="route53"),
    ]
    web = application("web", "web", alb.listener_arn, 10, 50, rates.url)
    tcp = behind(
        application("tcp", "tcp", alb.listener_arn, 0, 50, rates.url),
        "nlb",
        {"listenerARN": edge.nlb.listener_arn},
    )
    tcp["failurePolicy"] = {"type": "Rollback", "delaySeconds": 1}
    dns = behind(
        application("dns", "dns", alb.listener_arn, 0, 25, rates.url),
        "route53",
        {"hostedZoneID": edge.zone, "recordName": NAME, "ttl": TTL, "roleARN": ROLE_B},
    )
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": namespace},
            "spec": {"clusters": v1, "applications": [web, tcp, dns]},
        }
    )

    async def shown() -> dict[str, dict[str, int]]:
        return {
            "web": await s.weights(alb.listener_arn, 10),
            "tcp": await s.nlb_weights(edge.nlb.listener_arn),
            "dns": await s.records(edge.zone_config, edge.zone, NAME, "dns"),
        }

    async with running(rt_client, namespace, s.eks.config):

        async def completed() -> bool:
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=120), await s.debug()
        assert await shown() == {
            "web": {"www-1-v1": 50, "www-2-v1": 50},
            "tcp": {"tcp-v1": 100},
            "dns": {"dns-1-v1": 50, "dns-2-v1": 50},
        }

        # The v2 set; tcp's check fails on its new cluster.
        rates.values["tcp-v2"] = 0.5
        v2 = [
            await s.cluster("www-1-v2", "web"),
            await s.cluster("www-2-v2", "web"),
            await s.cluster("tcp-v2", "tcp", backend="nlb"),
            await s.cluster("dns-1-v2", "dns", backend="route53"),
            await s.cluster("dns-2-v2", "dns", backend="route53"),
        ]
        # The walk is read from the writes okra sends (each ModifyRule, ModifyListener and
        # ChangeResourceRecordSets, as the proxy before moto received it), not by sampling
        # AWS: web's 50 % step holds only while its check runs, shorter than a poll of all
        # three backends on a busy machine.
        s.record_rule_writes()
        await s.set_clusters(v2)

        def written() -> dict[str, list[int]]:
            return {
                "web": walk(s.rule_writes()),
                "tcp": walk(s.rule_writes("ModifyListener")),
                "dns": walk([r for _, r in s.record_writes(NAME)]),
            }

        async def walked() -> bool:
            apps = {a["name"]: a.get("phase") for a in (await s.status()).get("applications") or []}
            return apps == {"web": "Synced", "tcp": "Reverted", "dns": "Synced"} and [
                shares[-1] for shares in written().values()
            ] == [100, 0, 100]

        assert await eventually(walked, within=180), (written(), await s.debug())
        assert written() == {
            "web": [0, 50, 100],
            "tcp": [0, 50, 0],  # the canary step, then back
            "dns": [0, 25, 50, 75, 100],
        }
        # a step's records are written only once the last step's are in effect (Route
        # 53's INSYNC, then the TTL, to the whole second up) and its checks ran: never
        # within the TTL of the last write (the proxy's times are monotonic, okra's
        # wall-clock: a hundredth of a second for the two clocks)
        times, last = [], 0
        for t, records in s.record_writes(NAME):
            share = walk([records])[-1]
            if share != last:
                times.append(t)
                last = share
        gaps = [round(b - a, 2) for a, b in itertools.pairwise(times)]
        print(f"\ndns: steps written {gaps} s apart (TTL {TTL} s)")
        assert len(gaps) == 3, gaps
        assert all(g >= TTL - 0.01 for g in gaps), gaps
        assert await shown() == {
            "web": {"www-1-v2": 50, "www-2-v2": 50},
            "tcp": {"tcp-v1": 100},
            "dns": {"dns-1-v2": 50, "dns-2-v2": 50},
        }
        st = await s.status()
        apps = {a["name"]: a for a in st["applications"]}
        assert {n: (a["phase"], a["version"], a.get("weight")) for n, a in apps.items()} == {
            "web": ("Synced", "v2", 100),
            "tcp": ("Reverted", "v2", 0),
            "dns": ("Synced", "v2", 100),
        }
        assert "check sys-tcp-errors failed 3 tries in a row" in apps["tcp"]["message"]
        assert apps["tcp"]["serving"] == ["tcp-v1"]
        assert st["phase"] == "Failed"
        # the application Cells took the single Cell's ingress of each backend
        cells = {a: await rt_client.get(CELL, f"sys-{a}", namespace) for a in apps}
        assert {a: c["spec"]["ingress"]["type"] for a, c in cells.items()} == {
            "web": "AWSApplicationLoadBalancer",
            "tcp": "AWSNetworkLoadBalancer",
            "dns": "AWSRoute53",
        }
        code, out, err = await okra_cli(control_plane, namespace, "get", "cell", "sys")
        assert code == 0, err
        for line in (
            "  tcp  Reverted  (Cell sys-tcp)",
            "    ├─ v1 serving: tcp-v1 (100%)",
            "    └─ v2 going to: tcp-v2",
            "    └─ v2 serving: dns-1-v2 (50%), dns-2-v2 (50%)",
            "    └─ v2 serving: www-1-v2 (50%), www-2-v2 (50%)",
        ):
            assert line in out.splitlines(), out
