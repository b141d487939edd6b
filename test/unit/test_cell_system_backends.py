"""A system Cell's applications behind each traffic backend: an ALB rule (`alb`), an NLB
listener's default action (`nlb`, blue/green or weighted canary) and Route 53 weighted
records (`route53`). The application's Cell gets the single Cell's ingress of that kind;
steps, checks, failure policy and `status.applications[].weight` are the same for all
three (the world of `test_cell_system_plan`, each application's Cell planned by the real
Cell plan)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from okra_controllers.cell.system.plan import plan
from unit.test_cell_system_plan import (
    SystemWorld,
    _weights_over_time,
    app,
    by_cluster,
    cluster,
    prometheus_check,
    readings,
    replacing_one,
    rolled_out,
    system,
    tg_arn,
)

NLB_LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/net/tcp/1/2"
ROLE = "arn:aws:iam::222222222222:role/okra-dns"
FIRST = [
    cluster("web-1-v1", "web"),
    cluster("web-2-v1", "web"),
    cluster("tcp-v1", "tcp"),
    cluster("dns-1-v1", "dns"),
    cluster("dns-2-v1", "dns"),
]
THEN = [{**c, **cluster(c["name"].replace("-v1", "-v2"), c["labels"]["role"])} for c in FIRST]


def nlb_app(name: str, role: str, step: int, checks: bool = False, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clusterSelector": {"matchEKSTags": {"role": role}},
        "nlb": {
            "listenerARN": NLB_LISTENER,
            "targetGroup": {"arnFromLabel": "targetGroupARN"},
            "updateStrategy": {"stepWeight": step},
        },
        "checks": [prometheus_check()] if checks else [],
        **kw,
    }


def route53_app(name: str, role: str, step: int, checks: bool = False, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clusterSelector": {"matchEKSTags": {"role": role}},
        "route53": {
            "hostedZoneID": "Z0123456789",
            "recordName": "dns.example.com",
            "ttl": 30,
            "roleARN": ROLE,
            "targetGroup": {"arnFromLabel": "targetGroupARN"},
            "updateStrategy": {"stepWeight": step},
        },
        "checks": [prometheus_check()] if checks else [],
        **kw,
    }


def three(checks: bool = False, **tcp: Any) -> list[dict[str, Any]]:
    """web behind the ALB (steps of 50), tcp behind the NLB (blue/green unless `tcp` says
    otherwise), dns behind Route 53 (steps of 25)."""
    return [
        app("web", "web", 50, checks=checks),
        nlb_app("tcp", "tcp", 100, checks=checks) | tcp,
        route53_app("dns", "dns", 25, checks=checks),
    ]


def new_share(w: SystemWorld, name: str) -> list[int]:
    """The new clusters' share of the application's weights, each change once."""
    return [sum(v for k, v in p.items() if "-v2" in k) for p in _weights_over_time(w, name)]


def reported(w: SystemWorld, name: str) -> list[int | None]:
    """`status.applications[].weight` of `name`, each change once."""
    out: list[int | None] = []
    for p in w.history:
        a = next(a for a in p.status.applications or [] if a.name == name)
        if not out or out[-1] != a.weight:
            out.append(a.weight)
    return out


def test_each_application_cell_gets_its_backends_ingress() -> None:
    confirm = {"window": "2s", "tolerance": 5, "minRequests": 10, "deadline": "10s"}
    apps = three()
    apps[2]["trafficConfirmation"] = confirm
    apps[1]["nlb"]["roleARN"] = ROLE
    w = SystemWorld(system(FIRST, apps))
    w.tick()
    cells = {c["metadata"]["name"]: c["spec"] for c in w.objects["cells"]}
    selector = {"okra.mumo.co/system": "sys", "okra.mumo.co/application": "tcp"}
    assert cells["sys-tcp"]["ingress"] == {
        "type": "AWSNetworkLoadBalancer",
        "awsNetworkLoadBalancer": {
            "listenerARN": NLB_LISTENER,
            "roleARN": ROLE,
            "targetGroupSelector": {"matchLabels": selector},
        },
    }
    assert cells["sys-tcp"]["updateStrategy"]["canary"]["steps"] == [{"setWeight": 100}]
    assert cells["sys-dns"]["ingress"] == {
        "type": "AWSRoute53",
        "awsRoute53": {
            "hostedZoneID": "Z0123456789",
            "recordName": "dns.example.com",
            "recordType": "A",
            "ttl": 30,
            "roleARN": ROLE,
            "targetGroupSelector": {"matchLabels": selector | {"okra.mumo.co/application": "dns"}},
        },
    }
    assert cells["sys-dns"]["updateStrategy"]["canary"]["steps"] == [
        {"setWeight": 25},
        {"setWeight": 50},
        {"setWeight": 75},
        {"setWeight": 100},
    ]
    assert cells["sys-dns"]["trafficConfirmation"] == confirm
    assert "trafficConfirmation" not in cells["sys-tcp"]
    # each cluster's target group, labelled for its application's Cell
    tgs = {t["metadata"]["name"]: t["spec"]["arn"] for t in w.objects["tgs"]}
    assert tgs["sys-tcp-tcp-v1"] == tg_arn("tcp-v1")
    assert tgs["sys-dns-dns-2-v1"] == tg_arn("dns-2-v1")


def test_each_backend_walks_its_steps_and_reports_its_weight() -> None:
    w = rolled_out(three(), FIRST, THEN)
    w.run(40)
    assert new_share(w, "web") == [0, 50, 100]
    assert new_share(w, "tcp") == [0, 100]  # blue/green: one switch
    assert new_share(w, "dns") == [0, 25, 50, 75, 100]
    assert reported(w, "web") == [0, 50, 100]
    assert reported(w, "tcp") == [0, 100]
    assert reported(w, "dns") == [0, 25, 50, 75, 100]
    assert w.weights("tcp") == {"sys-tcp-tcp-v2": 100}
    assert w.weights("dns") == {"sys-dns-dns-1-v2": 50, "sys-dns-dns-2-v2": 50}
    assert {a.name: (a.phase, a.version) for a in w.status.applications or []} == {
        "web": ("Synced", "v2"),
        "tcp": ("Synced", "v2"),
        "dns": ("Synced", "v2"),
    }
    assert w.status.phase == "Completed"


def test_an_nlb_weighted_canary_waits_for_its_checks_at_each_step() -> None:
    apps = [nlb_app("tcp", "tcp", 50, checks=True)]
    w = rolled_out(apps, FIRST[2:3], THEN[2:3])
    w.run(30)
    assert new_share(w, "tcp") == [0, 50, 100]
    promotes = [
        c["metadata"]["annotations"]["okra.mumo.co/promote"].split("/")[1]
        for p in w.history
        for c in p.cells
        if "okra.mumo.co/promote" in c["metadata"]["annotations"]
    ]
    assert set(promotes) == {"1", "3"}  # steps: 50, pause, 100, pause
    assert sorted({n for p in w.history for n in (c["metadata"]["name"] for c in p.checks)}) == [
        "sys-tcp-errors"  # one cluster: one Check
    ]
    assert w.app("tcp").phase == "Synced"


def test_a_failed_check_on_the_nlb_application_rolls_it_back_and_the_others_complete() -> None:
    apps = three(checks=True, failurePolicy={"type": "Rollback", "delaySeconds": 2})
    w = rolled_out(apps, FIRST, THEN)
    w.check_passes = lambda name: "-tcp-" not in name
    w.run(60)
    tcp = w.app("tcp")
    assert tcp.phase == "Reverted", tcp
    assert "check sys-tcp-errors failed 3 tries in a row (retries: 2)" in tcp.message
    assert new_share(w, "tcp") == [0, 100, 0]  # switched, then back
    assert w.weights("tcp") == {"sys-tcp-tcp-v1": 100}
    assert tcp.weight == 0
    assert new_share(w, "web")[-1] == 100
    assert w.app("web").phase == "Synced"
    assert new_share(w, "dns") == [0, 25, 50, 75, 100]
    assert w.app("dns").phase == "Synced"
    assert w.status.phase == "Failed"


def test_a_target_group_problem_names_the_backends_field() -> None:
    fixed = nlb_app("tcp", "web", 100)
    fixed["nlb"]["targetGroup"] = {"arn": tg_arn("one")}
    unlabelled = route53_app("dns", "dns", 100)
    unlabelled["route53"]["targetGroup"] = {"arnFromLabel": "dnsTargetGroupARN"}
    w = SystemWorld(system(FIRST, [fixed, unlabelled]))
    w.tick()
    assert w.app("tcp").phase == "Error"
    assert w.app("tcp").message == (
        "nlb.targetGroup.arn names one target group, but 2 clusters serve the application: "
        "use arnFromLabel or targetgroupBindingSelector"
    )
    assert w.app("dns").message == (
        "cluster dns-1-v1 has no target group ARN in its label 'dnsTargetGroupARN'"
    )


def test_a_check_reads_the_nlb_listener_and_the_record_name() -> None:
    check = prometheus_check()
    check["analysis"]["query"] = 'flows{lb="{{.Vars.nlbListenerARN}}"}'
    dns_check = prometheus_check("answers")
    dns_check["analysis"]["query"] = 'answers{name="{{.Vars.route53RecordName}}"}'
    apps = [nlb_app("tcp", "tcp", 100) | {"checks": [check]}]
    apps.append(route53_app("dns", "dns", 100) | {"checks": [dns_check]})
    w = rolled_out(apps, FIRST[2:], THEN[2:])
    queries = {
        c["metadata"]["name"]: c["spec"]["provider"]["prometheus"]["query"]
        for c in plan(w.observed()).checks
    }
    assert queries == {
        "sys-tcp-errors": f'flows{{lb="{NLB_LISTENER}"}}',
        "sys-dns-answers": 'answers{name="dns.example.com"}',
    }


@pytest.mark.parametrize("make", [nlb_app, route53_app], ids=["nlb", "route53"])
def test_a_kept_cluster_keeps_its_share_behind_an_nlb_and_route53(
    make: Callable[..., dict[str, Any]],
) -> None:
    """{web-1-v1, web-2-v1} to {web-1-v1, web-3}: web-1-v1 keeps 50 at every reading, under
    one name (for Route 53, its record's SetIdentifier: the record is never replaced)."""
    w = replacing_one(25, make=make)
    seen = readings(w, 40)
    assert seen == [
        {"web-1-v1": 50, "web-2-v1": 50},
        {"web-1-v1": 50, "web-2-v1": 37, "web-3": 13},
        {"web-1-v1": 50, "web-2-v1": 25, "web-3": 25},
        {"web-1-v1": 50, "web-2-v1": 12, "web-3": 38},
        {"web-1-v1": 50, "web-3": 50},
    ]
    kept = {
        f.name for p in w.children["web"].history for f in p.forward or () if "web-1-v1" in f.arn
    }
    assert kept == {"sys-web-web-1-v1"}
    assert (w.app("web").phase, w.app("web").serving) == ("Synced", ["web-1-v1", "web-3"])


def test_only_an_nlb_refuses_a_move_of_more_than_5_target_groups() -> None:
    """3 serving and 3 arriving clusters: one forward of 6 target groups, which an NLB
    cannot hold (5); Route 53 holds 100 weighted records of a name, and walks."""
    many = [cluster(f"w{i}", "web") for i in range(6)]
    ends = {}
    for make in (nlb_app, route53_app):
        apps = [make("web", "web", 50)]
        w = SystemWorld(system(many[:3], apps))
        w.run(12)
        for c in many[3:]:
            w.up(c["name"], "web")
        w.spec = system(many[3:], apps)
        w.run(30)
        ends[make.__name__] = (w.app("web").phase, w.app("web").message, by_cluster(w, "web"))
    assert ends["nlb_app"] == (
        "Error",
        "moving from w0, w1, w2 to w3, w4, w5 routes to 6 target groups at once, but an NLB "
        "forward action holds at most 5: move in two changes of spec.clusters",
        {"w0": 33, "w1": 33, "w2": 34},
    )
    assert ends["route53_app"][0] == "Synced"
    assert ends["route53_app"][2] == {"w3": 33, "w4": 33, "w5": 34}
