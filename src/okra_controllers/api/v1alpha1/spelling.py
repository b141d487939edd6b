"""The original okra's spellings (its Go API, `github.com/mumoshu/okra` `api/v1alpha1`),
rewritten into okra's, and what a manifest spells the original's way.

Every field of the original's seven kinds is accepted. Most have the same name and place
in okra; these are written elsewhere, and a manifest that uses them is read as if written
okra's way (the models call the `normalise_*` functions before validating), with one
`DeprecatedSpelling` warning Event per field naming okra's spelling (`deprecated_spellings`,
which the controllers call when the generation changes):

- Cell: `ingress.<lb>.targetGroupSelector.versionLabels` is `spec.versionLabels`;
  `ingress.awsApplicationLoadBalancer.listener.rule` is `listenerRule` (its `headers` map
  is a list of `{name, values}`, its `queryStrings` map a list of `{key, value}`, and its
  `forward` is ignored: the Cell computes the forward from its target groups). Argo
  Rollouts step kinds that have no meaning for clusters keep their place in the steps,
  so `startingStep` counts the same: an `experiment` step runs its `analyses` as an
  `analysis` step (it starts no ReplicaSets and has no duration), and `setCanaryScale`
  (pod counts) is a step that changes nothing (`stepWeight: 0`).
- AWSApplicationLoadBalancerConfig: `listener.rule` is `listenerRule` (as for the Cell),
  and `listener.rule.forward.targetGroups` is `forwardTargetGroups` (a missing `name` is
  the target group's name from its ARN, a missing `weight` 0).
- AWSTargetGroupSet: `arn` is ignored (the original's controller never read it).
- ClusterSet: `generators[].awseks.selector` is `generators[].awseks.clusterSelector`.

AWSTargetGroup, Pause and VersionBlocklist are spelled as the original spells them.
The functions here work on the object as written (plain dicts) and never change their
argument.
"""

from __future__ import annotations

import copy
from typing import Any

Json = dict[str, Any]

_LB_KEYS = ("awsApplicationLoadBalancer", "awsNetworkLoadBalancer", "awsRoute53")


def _dict(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _tg_name(arn: str) -> str:
    parts = arn.split(":targetgroup/", 1)
    return parts[1].split("/", 1)[0] if len(parts) == 2 else arn


def listener_rule(rule: Json) -> Json:
    """The original's `listener.rule` (without `forward`) as okra's `listenerRule`."""
    out: Json = {}
    if rule.get("priority"):
        out["priority"] = rule["priority"]
    for key in ("hosts", "pathPatterns", "methods", "sourceIPs"):
        if rule.get(key):
            out[key] = rule[key]
    headers = _dict(rule.get("headers"))
    if headers:
        out["headers"] = [{"name": k, "values": v} for k, v in headers.items()]
    queries = _dict(rule.get("queryStrings"))
    if queries:
        out["queryStrings"] = [
            {"key": k, "value": v} if k else {"value": v} for k, v in queries.items()
        ]
    return out


def forward_target_groups(rule: Json) -> list[Json]:
    """The original's `listener.rule.forward.targetGroups` as `forwardTargetGroups`."""
    out = []
    for tg in _dict(rule.get("forward")).get("targetGroups") or []:
        tg = _dict(tg)
        arn = str(tg.get("arn") or "")
        name = tg.get("name") or _tg_name(arn)
        out.append({"name": name, "arn": arn, "weight": tg.get("weight") or 0})
    return out


def _selector(ingress: Json, key: str) -> Json:
    return _dict(_dict(ingress.get(key)).get("targetGroupSelector"))


def _rule_of(lb: Json) -> Json | None:
    listener = lb.get("listener")
    if not isinstance(listener, dict):
        return None
    return _dict(listener.get("rule"))


def normalise_cell(spec: Any) -> Any:
    """A Cell spec as okra spells it."""
    if not isinstance(spec, dict):
        return spec
    ingress = _dict(spec.get("ingress"))
    strategy = _dict(spec.get("updateStrategy"))
    canary = _dict(strategy.get("canary"))
    steps = canary.get("steps") or []
    moved_labels = [
        key for key in _LB_KEYS if isinstance(_selector(ingress, key).get("versionLabels"), list)
    ]
    listener = _dict(ingress.get("awsApplicationLoadBalancer")).get("listener") is not None
    odd_steps = any(_dict(s).keys() & {"experiment", "setCanaryScale"} for s in steps)
    if not (moved_labels or listener or odd_steps):
        return spec
    out = copy.deepcopy(spec)
    ingress = out["ingress"] if moved_labels or listener else ingress
    labels = [v for v in out.get("versionLabels") or [] if isinstance(v, str)]
    for key in moved_labels:
        selector = ingress[key]["targetGroupSelector"]
        labels += [v for v in selector.pop("versionLabels") if v not in labels]
    if moved_labels:
        out["versionLabels"] = labels
    if listener:
        lb = ingress["awsApplicationLoadBalancer"]
        rule = listener_rule(_rule_of(lb) or {})
        del lb["listener"]  # the schema refuses it beside listenerRule
        if rule:
            lb["listenerRule"] = rule
    if odd_steps:
        out["updateStrategy"]["canary"]["steps"] = [_step(s) for s in steps]
    return out


def _step(step: Any) -> Any:
    if not isinstance(step, dict):
        return step
    if "experiment" in step:
        analyses = [_dict(a) for a in _dict(step["experiment"]).get("analyses") or []]
        if not analyses:
            return {"stepWeight": 0}
        args: list[Json] = []
        for a in analyses:
            args += [x for x in a.get("args") or [] if x not in args]
        analysis: Json = {
            "templates": [
                {"templateName": a.get("templateName"), "clusterScope": bool(a.get("clusterScope"))}
                for a in analyses
            ]
        }
        if args:
            analysis["args"] = args
        return {"analysis": analysis}
    if "setCanaryScale" in step:
        return {"stepWeight": 0}
    return step


def normalise_alb_config(spec: Any) -> Any:
    """An AWSApplicationLoadBalancerConfig spec as okra spells it (the schema refuses
    `listener` beside `listenerRule` or `forwardTargetGroups`)."""
    if not isinstance(spec, dict) or spec.get("listener") is None:
        return spec
    out = {k: v for k, v in spec.items() if k != "listener"}
    rule = _rule_of(spec) or {}
    if listener_rule(rule):
        out["listenerRule"] = listener_rule(rule)
    if forward_target_groups(rule):
        out["forwardTargetGroups"] = forward_target_groups(rule)
    return out


def normalise_target_group_set(spec: Any) -> Any:
    if not isinstance(spec, dict) or "arn" not in spec:
        return spec
    return {k: v for k, v in spec.items() if k != "arn"}


def normalise_cluster_set(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    generators = spec.get("generators") or []
    if not any("selector" in _dict(_dict(g).get("awseks")) for g in generators):
        return spec
    out = copy.deepcopy(spec)
    for g in out["generators"]:
        eks = _dict(_dict(g).get("awseks"))
        if "selector" in eks and "clusterSelector" not in eks:
            eks["clusterSelector"] = eks.pop("selector")
    return out


def deprecated_spellings(kind: str, spec: Any) -> list[str]:
    """What a `kind` spec (as written) spells the original okra's way, each with the
    field's path and okra's spelling (the `DeprecatedSpelling` Event's message)."""
    spec = _dict(spec)
    out: list[str] = []
    if kind == "Cell":
        ingress = _dict(spec.get("ingress"))
        for key in _LB_KEYS:
            if _selector(ingress, key).get("versionLabels") is not None:
                out.append(
                    f"spec.ingress.{key}.targetGroupSelector.versionLabels: "
                    "write spec.versionLabels"
                )
        alb = _dict(ingress.get("awsApplicationLoadBalancer"))
        if alb.get("listener") is not None:
            out.append(
                "spec.ingress.awsApplicationLoadBalancer.listener.rule: write "
                "spec.ingress.awsApplicationLoadBalancer.listenerRule"
                + _map_note(_rule_of(alb) or {})
            )
            if _dict((_rule_of(alb) or {}).get("forward")):
                out.append(
                    "spec.ingress.awsApplicationLoadBalancer.listener.rule.forward: ignored "
                    "(the Cell forwards to the target groups its selector finds); remove it"
                )
        steps = _dict(_dict(spec.get("updateStrategy")).get("canary")).get("steps") or []
        for i, s in enumerate(steps):
            s = _dict(s)
            if "experiment" in s:
                analyses = _dict(s["experiment"]).get("analyses")
                if analyses:
                    out.append(
                        f"spec.updateStrategy.canary.steps[{i}].experiment: runs its analyses as "
                        "one analysis step (okra starts no ReplicaSets and the experiment's "
                        "duration is not waited for); write an analysis step"
                    )
                    out += _experiment_analyses(i, analyses)
                else:
                    out.append(
                        f"spec.updateStrategy.canary.steps[{i}].experiment: has no analyses and "
                        "changes nothing for clusters (okra starts no ReplicaSets); remove it"
                    )
            if "setCanaryScale" in s:
                out.append(
                    f"spec.updateStrategy.canary.steps[{i}].setCanaryScale: changes nothing for "
                    "clusters (it scales pods); remove it"
                )
        for i, app in enumerate(spec.get("applications") or []):
            secret = _dict(_dict(_dict(app).get("argocd")).get("clusterSecret"))
            if "lables" in secret:
                out.append(
                    f"spec.applications[{i}].argocd.clusterSecret.lables: write "
                    f"spec.applications[{i}].argocd.clusterSecret.labels"
                )
    elif kind == "AWSApplicationLoadBalancerConfig" and spec.get("listener") is not None:
        rule = _rule_of(spec) or {}
        if listener_rule(rule) or not forward_target_groups(rule):
            out.append("spec.listener.rule: write spec.listenerRule" + _map_note(rule))
        if forward_target_groups(rule):
            out.append("spec.listener.rule.forward.targetGroups: write spec.forwardTargetGroups")
    elif kind == "AWSTargetGroupSet" and "arn" in spec:
        out.append("spec.arn: ignored (the target groups come from the generators); remove it")
    elif kind == "ClusterSet":
        for i, g in enumerate(spec.get("generators") or []):
            if "selector" in _dict(_dict(g).get("awseks")):
                out.append(
                    f"spec.generators[{i}].awseks.selector: write "
                    f"spec.generators[{i}].awseks.clusterSelector"
                )
    return out


def _experiment_analyses(step: int, analyses: Any) -> list[str]:
    """An experiment analysis's `name` and `requiredForCompletion`, which okra does not read:
    the step's AnalysisRun is named after the step, and the step waits for every analysis
    (Argo Rollouts waits only for those `requiredForCompletion`)."""
    out = []
    where = f"spec.updateStrategy.canary.steps[{step}].experiment.analyses"
    for j, a in enumerate(analyses if isinstance(analyses, list) else []):
        a = _dict(a)
        if a.get("name"):
            out.append(
                f"{where}[{j}].name: not read (okra names the step's AnalysisRun after the "
                "step, and an analysis step has no name); remove it"
            )
        if "requiredForCompletion" in a:
            out.append(
                f"{where}[{j}].requiredForCompletion: not read (the step waits for every "
                "analysis to succeed, as if true for each); remove it"
            )
    return out


def _map_note(rule: Json) -> str:
    maps = [k for k in ("headers", "queryStrings") if _dict(rule.get(k))]
    if not maps:
        return ""
    return (
        " ("
        + ", ".join(
            "headers as [{name, values}]" if k == "headers" else "queryStrings as [{key, value}]"
            for k in maps
        )
        + ")"
    )
