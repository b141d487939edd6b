"""`make demo-fleet`, okra's standard scenario end to end with every link real (see
okra_testkit.scenario and okra_testkit.demo_fleet): EKS clusters in moto → ClusterSet → Argo
CD cluster Secrets → ApplicationSet → Applications synced by Argo CD onto the clusters
(ConfigMap, Service, TargetGroupBinding) → AWSTargetGroupSet → AWSTargetGroups by version → a
Cell canaries the ALB from v1 to v2 → v1 clusters deleted in moto → Secrets, Applications and
target groups go. The demo narrates each link when it reads it (the rule's weights as moto
shows them, sampled every 250 ms); this test holds each link of that narration to the
scenario, ends with exit 0 and leaves nothing running."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid

import pytest

from okra_testkit.envtest.leaks import leftover_servers
from okra_testkit.scenario import CANARY_TOTALS

RUN_ENV = "OKRA_TEST_RUN"
V1 = ("web-1-v1", "web-2-v1")
V2 = ("web-1-v2", "web-2-v2")
RULE = re.compile(r"^\[ *[0-9.]+s\] ALB rule in AWS: (.*)$")


def rules(out: str) -> list[dict[str, int]]:
    """Each rule the narration read from moto, in order ('-' is an empty rule)."""
    seen = []
    for line in out.splitlines():
        m = RULE.match(line)
        if m:
            pairs = [p.split("=") for p in m.group(1).split() if p != "-"]
            seen.append({name: int(weight) for name, weight in pairs})
    return seen


def between(out: str, start: str, end: str) -> str:
    return out[out.index(start) : out.index(end)]


@pytest.mark.timeout(600)
def test_demo_fleet_runs_the_standard_scenario_to_the_end() -> None:
    run_id = uuid.uuid4().hex
    proc = subprocess.run(
        [sys.executable, "-m", "okra_testkit.demo_fleet"],
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, RUN_ENV: run_id, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert leftover_servers(RUN_ENV, run_id, ("okra_controllers.manager",)) == []

    # v1: two clusters appear in EKS; everything downstream follows by itself.
    v1 = between(out, "== v1:", "== v2:")
    for name in V1:
        assert f"cluster {name} imported into Argo CD (Secret, version=v1)" in v1, out
        assert f"target group of {name} discovered (v1)" in v1, out
    assert rules(v1)[-1] == {"web-1-v1": 50, "web-2-v1": 50}, out

    # v2: the Cell canaries through its steps, each shown by AWS, v2 on both clusters at once.
    v2 = between(out, "== v2:", "== v1 retired:")
    for name in V2:
        assert f"cluster {name} imported into Argo CD (Secret, version=v2)" in v2, out
        assert f"target group of {name} discovered (v2)" in v2, out
    seen = rules(v2)
    assert seen[-1] == {"web-1-v2": 50, "web-2-v2": 50}, out
    assert all(sum(w.values()) == 100 for w in seen), seen
    v2_totals = [sum(v for n, v in w.items() if n in V2) for w in seen]
    assert [t for t in v2_totals if t in CANARY_TOTALS] == list(CANARY_TOTALS), seen
    assert all(t in (0, *CANARY_TOTALS) for t in v2_totals), seen
    assert all(w.get("web-1-v2") == w.get("web-2-v2") for w in seen), seen

    # v1 retired: deleted in EKS → Secrets → Applications → target groups → out of the rule.
    retired = between(out, "== v1 retired:", "== Summary")
    for name in V1:
        assert f"cluster {name} gone from EKS: its Argo CD Secret removed" in retired, out
        assert f"ApplicationSet removed Application web-{name}" in retired, out
        assert f"target group of {name} forgotten" in retired, out
    # Argo CD may report an Application Synced a moment after its objects took effect.
    for name in (*V1, *V2):
        synced = f"app synced onto {name}: ConfigMap, Service, TargetGroupBinding"
        assert synced in out[: out.index("== Summary")], out
    summary = out[out.index("== Summary") :]
    assert "clusters in Argo CD: web-1-v2, web-2-v2" in summary, out
    assert "Applications: web-web-1-v2, web-web-2-v2" in summary, out
    assert "ALB rule in AWS: web-1-v2=50, web-2-v2=50" in summary, out
