"""config/prometheus and config/grafana: the alert rules pass `promtool check rules`,
every dashboard query is valid PromQL (checked by promtool as recording rules), and
every metric they name is one the manager exports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "config" / "prometheus" / "prometheusrule.yaml"
DASHBOARD = REPO / "config" / "grafana" / "okra-dashboard.json"
PROMQL_WORDS = {
    "sum", "by", "rate", "increase", "max", "histogram_quantile", "le", "without", "on",
    "ignoring", "and", "or", "unless", "bool", "count", "avg", "min", "max_over_time",
}  # fmt: skip


def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    prometheus = os.environ.get("OKRA_PROMETHEUS")
    if not prometheus:
        out = subprocess.run(
            [str(REPO / "hack" / "prometheus.sh")], capture_output=True, text=True, check=False
        )
        prometheus = out.stdout.strip()
    tool = Path(prometheus).with_name("promtool")
    if not tool.exists():
        pytest.skip(f"no promtool beside {prometheus} (Debian's prometheus package has it)")
    return str(tool)


def alert_exprs() -> list[str]:
    rule = yaml.safe_load(RULES.read_text())
    return [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]


def dashboard_exprs() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in board["panels"] for t in p.get("targets", [])]


def check(tmp_path: Path, groups: list[dict[str, Any]]) -> str:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    out = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_alert_rules_pass_promtool(tmp_path: Path) -> None:
    rule = yaml.safe_load(RULES.read_text())
    assert rule["kind"] == "PrometheusRule"
    out = check(tmp_path, rule["spec"]["groups"])
    assert "SUCCESS: 8 rules found" in out
    names = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert {
        "OkraCellDegraded",
        "OkraAnalysisFailing",
        "OkraRolloutStuck",
        "OkraReconcileErrors",
        "OkraWatchStalled",
        "OkraWriteLoop",
        "OkraAWSThrottling",
    } <= names


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    exprs = dashboard_exprs()
    assert len(exprs) >= 10
    rules = [
        {"record": f"okra:dashboard:{i}", "expr": e.replace("$namespace", ".*")}
        for i, e in enumerate(exprs)
    ]
    check(tmp_path, [{"name": "dashboard", "rules": rules}])


def exported() -> set[str]:
    import okra_controllers.manager  # noqa: F401  (registers every controller's metrics)
    from okra_runtime.metrics import REGISTRY

    names = set()
    for family in REGISTRY.collect():
        names.add(family.name)
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
        for suffix in suffixes.get(family.type, ()):
            names.add(family.name + suffix)
    for family in REGISTRY.collect():
        for sample in family.samples:
            names.add(sample.name)
    return names


def test_every_metric_queried_is_exported() -> None:
    known = exported()
    assert not any(n.endswith("_created") for n in known)
    for expr in alert_exprs() + dashboard_exprs():
        bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"", " ", expr)
        for word in re.findall(r"[a-z_][a-z0-9_]*", bare):
            if word in PROMQL_WORDS or "_" not in word:
                continue
            if word in (
                "phase",
                "health",
                "namespace",
                "cell",
                "stable",
                "canary",
                "controller",
                "result",
            ):
                continue
            if word in ("group", "kind", "service", "operation", "outcome", "name"):
                continue
            assert word in known, f"{word} (in {expr!r}) is not a metric the manager exports"
