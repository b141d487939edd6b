"""`okra lint FILE...`: check okra manifests offline, before `kubectl apply`.

Each YAML document of a known kind (okra.mumo.co/v1alpha1, and argoproj.io
AnalysisTemplates, which okra reads unchanged) is checked for:

- schema: the pydantic model the CRD is generated from (unknown fields, types,
  ranges, patterns, required fields);
- validation rules: the CRD's `x-kubernetes-validations` (CEL), evaluated here
  by translating the subset okra's rules use into the condition language of
  `analysis/expr/` (`has()`, `size()`, `!`, `&&`, `||`, `?:`, comparisons,
  list `filter(x, x).size()`); a rule outside that subset is reported as not
  checked, never silently passed;
- metrics: with the arguments the file gives values substituted, the checks an
  AnalysisRun makes when it starts (Argo Rollouts' `ValidateMetrics`: count
  against the limits, durations, providers; conditions compiled by the parser
  the controller evaluates them with); a field naming an argument the caller
  gives is left to the run; `dryRun` / `measurementRetention` rules (regular
  expressions) that match no metric: an error in an AnalysisRun, a warning in
  a template (another template of the run may have the metric);
- ALB limits: at most 5 target groups in one forward action, weights 0..999
  (schema), a listener rule needs at least one condition, a Cell's versions
  are semver;
- template arguments: every `{{args.NAME}}` is declared; a Cell's analysis step
  supplies every argument without a default of a template in the same files,
  and only arguments the template declares;
- steps: pause durations, `startingStep` within the steps;
- warnings: what the kind's controller warns about in a Warning Event (the original okra's
  spellings, fields accepted and not read: `api.v1alpha1.warnings`), as warnings.

Messages are `FILE:LINE: KIND/NAME: PATH: message` (LINE of the offending
field, or of the nearest enclosing one). Exit 0 when no error, 1 otherwise.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

Path_ = tuple[str | int, ...]
MAX_FORWARD = 5
OKRA = "okra.mumo.co/v1alpha1"
ARGO_KINDS = ("AnalysisTemplate", "ClusterAnalysisTemplate")


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    obj: str
    path: str
    message: str
    level: str = "error"

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        tag = "" if self.level == "error" else f"{self.level}: "
        return f"{self.file}:{self.line}: {tag}{self.obj}: {where}{self.message}"


@dataclass
class Doc:
    file: str
    data: dict[str, Any]
    lines: dict[Path_, int]
    start: int

    @property
    def kind(self) -> str:
        return str(self.data.get("kind") or "")

    @property
    def name(self) -> str:
        return str((self.data.get("metadata") or {}).get("name") or "")

    def line(self, path: Path_) -> int:
        """The line of `path`, or of its nearest ancestor present in the file."""
        for n in range(len(path), -1, -1):
            if path[:n] in self.lines:
                return self.lines[path[:n]]
        return self.start


@dataclass
class Linter:
    problems: list[Problem] = field(default_factory=list)
    docs: list[Doc] = field(default_factory=list)

    def report(self, doc: Doc, path: Path_, message: str, level: str = "error") -> None:
        self.problems.append(
            Problem(
                doc.file, doc.line(path), f"{doc.kind}/{doc.name}", dotted(path), message, level
            )
        )

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "error"]


def dotted(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _lines(node: yaml.Node, path: Path_, out: dict[Path_, int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else str(k.start_mark)
            out[(*path, key)] = k.start_mark.line + 1
            _lines(v, (*path, key), out)
            out[(*path, key)] = k.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _lines(v, (*path, i), out)


def load(file: str, text: str, linter: Linter) -> None:
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        datas = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        linter.problems.append(Problem(file, line, "-", "", f"not valid YAML: {e}"))
        return
    for node, data in zip(nodes, datas, strict=True):
        if node is None or data is None:
            continue
        if not isinstance(data, dict):
            linter.problems.append(
                Problem(file, node.start_mark.line + 1, "-", "", "a document must be an object")
            )
            continue
        lines: dict[Path_, int] = {}
        _lines(node, (), lines)
        items = data.get("items") if data.get("kind") == "List" else None
        if isinstance(items, list):
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    sub = {p[2:]: n for p, n in lines.items() if p[:2] == ("items", i)}
                    linter.docs.append(Doc(file, item, sub, lines.get(("items", i), 1)))
            continue
        linter.docs.append(Doc(file, data, lines, node.start_mark.line + 1))


# -- the checks ------------------------------------------------------------------


def models() -> dict[str, type[BaseModel]]:
    from okra_controllers.api.v1alpha1 import CRD_MODELS
    from okra_runtime.crdgen import crd_info

    return {crd_info(m).kind: m for m in CRD_MODELS}


def lint_doc(linter: Linter, doc: Doc, known: dict[str, type[BaseModel]]) -> None:
    from okra_controllers.api.kinds import (
        ALB_CONFIG,
        ANALYSIS_RUN,
        ANALYSIS_TEMPLATE,
        CELL,
        CLUSTER_ANALYSIS_TEMPLATE,
    )

    api, kind = str(doc.data.get("apiVersion") or ""), doc.kind
    if (api == OKRA and kind in known) or (api.startswith("argoproj.io/") and kind in ARGO_KINDS):
        model = known[kind]
    elif api.split("/")[0] == OKRA.split("/")[0]:
        linter.report(
            doc, ("kind",), f"unknown kind {kind!r} in {api} (known: {', '.join(sorted(known))})"
        )
        return
    else:
        return  # not okra's: other tools check it
    if not doc.name:
        linter.report(doc, ("metadata",), "metadata.name is required")
    try:
        model.model_validate(doc.data)
    except ValidationError as e:
        for err in e.errors():
            path = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
            linter.report(doc, path, _schema_message(err, path))
    _cel(linter, doc, model)
    if api == OKRA:
        _warnings(linter, doc)
    if kind in (ANALYSIS_TEMPLATE.kind, CLUSTER_ANALYSIS_TEMPLATE.kind, ANALYSIS_RUN.kind):
        _analysis(linter, doc)
    elif kind == CELL.kind:
        _cell(linter, doc)
    elif kind == ALB_CONFIG.kind:
        spec = doc.data.get("spec") or {}
        _forward_limit(
            linter, doc, ("spec", "forwardTargetGroups"), spec.get("forwardTargetGroups")
        )
        _listener_rule(linter, doc, ("spec", "listenerRule"), spec.get("listenerRule"))


def _warnings(linter: Linter, doc: Doc) -> None:
    """What the kind's controller would warn about (a Warning Event), as warnings here."""
    from okra_controllers.api.v1alpha1.warnings import spec_warnings

    for warning in spec_warnings(doc.kind, doc.data.get("spec")):
        where, _, message = warning.partition(": ")
        path = _path(where)
        linter.report(doc, path, message or warning, "warning")


def _path(dotted_path: str) -> Path_:
    """`spec.a[1].b` as ("spec", "a", 1, "b")."""
    out: list[str | int] = []
    for part in dotted_path.split("."):
        name, *indices = part.split("[")
        out += [name] if name else []
        out += [int(i.rstrip("]")) for i in indices if i.rstrip("]").isdigit()]
    return tuple(out)


def _schema_message(err: Any, path: Path_) -> str:
    kind, msg = err.get("type", ""), str(err.get("msg", ""))
    if kind == "too_long" and path[-1:] == ("forwardTargetGroups",):
        n = len(err.get("input") or [])
        return f"{n} target groups: an ALB forward action holds at most {MAX_FORWARD}"
    if kind == "extra_forbidden":
        return "unknown field (check its spelling and indentation)"
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error" or kind == "string_pattern_mismatch":
        return f"{msg} (got {err.get('input')!r})"
    return msg


def _analysis(linter: Linter, doc: Doc) -> None:
    from okra_controllers.templating import ARGS, placeholders

    spec = doc.data.get("spec") or {}
    args = [a for a in spec.get("args") or [] if isinstance(a, dict)]
    declared = {a.get("name") for a in args}
    # Arguments the file gives a value; the others (the caller's, a Secret's, a field's) are
    # known only when the run starts.
    known = {str(a["name"]): str(a["value"]) for a in args if a.get("value") is not None}
    seen: set[str] = set()
    names: list[str] = []
    for i, metric in enumerate(spec.get("metrics") or []):
        if not isinstance(metric, dict):
            continue
        name = metric.get("name")
        names.append(str(name))
        if name in seen:
            linter.report(
                doc, ("spec", "metrics", i, "name"), f"metric name {name!r} is used twice"
            )
        seen.add(str(name))
        used_args = {
            p.removeprefix("args.")
            for p in placeholders(yaml.safe_dump(metric), ARGS)
            if p.startswith("args.")
        }
        for used in sorted(used_args):
            if used not in declared:
                linter.report(
                    doc,
                    ("spec", "metrics", i),
                    f"{{{{args.{used}}}}} is used but spec.args declares no {used!r}",
                )
        _metric_rules(linter, doc, i, metric, known)
    for rules in ("dryRun", "measurementRetention"):
        _name_rules(linter, doc, rules, spec.get(rules), names)
    _judge_settings(linter, doc, spec)


def _metric_rules(
    linter: Linter, doc: Doc, i: int, metric: dict[str, Any], known: dict[str, str]
) -> None:
    """Argo's ValidateMetric and okra's checks of one metric, on the metric with the file's
    argument values substituted; a field still naming an argument the caller gives is left
    for the run to check."""
    from okra_controllers.analysis.args import ArgumentError, substitute
    from okra_controllers.analysis.validation import okra_problems, validate_metric
    from okra_controllers.api.v1alpha1.analysis import Metric
    from okra_controllers.templating import ARGS, placeholders

    given = {
        k: v
        for k, v in metric.items()
        if not any(
            p.removeprefix("args.") not in known for p in placeholders(yaml.safe_dump({k: v}), ARGS)
        )
    }
    try:
        parsed = Metric.model_validate({"name": "m", "provider": {}, **given})
        resolved = substitute(parsed, known)
    except (ValidationError, ArgumentError):
        return  # the schema check above names the field
    path: Path_ = ("spec", "metrics", i)
    left = set(metric) - set(given)  # fields the run checks once the caller's args are in
    problem = validate_metric(resolved)
    if problem in ("no provider specified", "multiple providers specified") and (
        "provider" in left
    ):
        problem = None
    if problem is not None:
        field = problem.split(" ", 1)[0]
        field = {"invalid": "interval" if "interval" in problem else "initialDelay"}.get(
            field, field
        )
        linter.report(doc, (*path, field) if field in metric else path, problem)
    for p in okra_problems(resolved):
        if p.startswith("provider:") and "provider" in left:
            continue
        field = p.split(":", 1)[0].replace("could not evaluate ", "").split(" ", 1)[0]
        linter.report(doc, (*path, field) if field in metric else path, p)


def _name_rules(linter: Linter, doc: Doc, field: str, rules: Any, names: list[str]) -> None:
    """A `dryRun` / `measurementRetention` rule is a regular expression; one that matches no
    metric ends a run in Error (in a template it may match a metric of another template the
    run combines it with: a warning)."""
    from okra_controllers.analysis.verdict import rule_matches
    from okra_controllers.api.kinds import ANALYSIS_RUN

    for j, rule in enumerate(rules or []):
        pattern = rule.get("metricName") if isinstance(rule, dict) else None
        if not isinstance(pattern, str) or any(rule_matches(pattern, n) for n in names):
            continue
        hint = " (a regular expression: `.*` matches every metric)" if pattern == "*" else ""
        linter.report(
            doc,
            ("spec", field, j, "metricName"),
            f"Rule didn't match any metric name(s): {pattern!r}{hint}",
            "error" if doc.kind == ANALYSIS_RUN.kind else "warning",
        )


def _judge_settings(linter: Linter, doc: Doc, spec: dict[str, Any]) -> None:
    """groupWeights and effect-size thresholds the run would refuse."""
    from pydantic import ValidationError

    from okra_controllers.analysis.verdict import judgment_problems
    from okra_controllers.api.kinds import ANALYSIS_RUN
    from okra_controllers.api.v1alpha1.analysis import Judgment, Metric

    try:
        metrics = [Metric.model_validate(m) for m in spec.get("metrics") or []]
        judgment = Judgment.model_validate(spec["judgment"]) if spec.get("judgment") else None
    except (ValidationError, TypeError):
        return  # the schema check reports it
    for problem in judgment_problems(metrics, judgment):
        level = "error" if doc.kind == ANALYSIS_RUN.kind else "warning"  # groups may be elsewhere
        linter.report(doc, ("spec",), problem, level)


def _forward_limit(linter: Linter, doc: Doc, path: Path_, forward: Any) -> None:
    """Weights 0..999 (the schema checks them too, but not in a list already too long)."""
    if not isinstance(forward, list) or len(forward) <= MAX_FORWARD:
        return
    for i, f in enumerate(forward):
        w = f.get("weight") if isinstance(f, dict) else None
        if isinstance(w, int) and not 0 <= w <= 999:
            linter.report(doc, (*path, i, "weight"), f"weight {w}: an ALB weight is 0..999")


CONDITIONS = ("hosts", "pathPatterns", "methods", "sourceIPs", "headers", "queryStrings")


def _listener_rule(linter: Linter, doc: Doc, path: Path_, rule: Any) -> None:
    if isinstance(rule, dict) and not any(rule.get(k) for k in CONDITIONS):
        linter.report(
            doc,
            path,
            "a listener rule other than the default needs at least one condition "
            f"({', '.join(CONDITIONS)}); omit listenerRule for a catch-all pathPatterns: ['/*']",
        )


def _cell(linter: Linter, doc: Doc) -> None:
    from okra_controllers.analysis.duration import parse_duration
    from okra_controllers.cell.versions import parse_version

    spec = doc.data.get("spec") or {}
    alb = (spec.get("ingress") or {}).get("awsApplicationLoadBalancer")
    if isinstance(alb, dict):
        _listener_rule(
            linter,
            doc,
            ("spec", "ingress", "awsApplicationLoadBalancer", "listenerRule"),
            alb.get("listenerRule"),
        )
    if (
        "ingress" in spec
        and (spec.get("ingress") or {}).get("type", "AWSApplicationLoadBalancer")
        == "AWSApplicationLoadBalancer"
        and not alb
    ):
        linter.report(doc, ("spec", "ingress"), "set ingress.awsApplicationLoadBalancer")
    version = spec.get("version")
    if version is not None and parse_version(str(version)) is None:
        linter.report(
            doc, ("spec", "version"), f"{version!r} is not a version (semver like v1.2.3)"
        )
    canary = (spec.get("updateStrategy") or {}).get("canary") or {}
    steps = canary.get("steps") or []
    base: Path_ = ("spec", "updateStrategy", "canary")
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        pause = step.get("pause")
        if isinstance(pause, dict) and isinstance(pause.get("duration"), str):
            d = pause["duration"]
            if not d.isdigit():
                try:
                    parse_duration(d)
                except ValueError as e:
                    linter.report(doc, (*base, "steps", i, "pause", "duration"), str(e))
        if isinstance(step.get("analysis"), dict):
            _step_args(linter, doc, (*base, "steps", i, "analysis"), step["analysis"])
    background = canary.get("analysis")
    if isinstance(background, dict):
        _step_args(linter, doc, (*base, "analysis"), background)
        start = background.get("startingStep")
        if isinstance(start, int) and steps and start >= len(steps):
            linter.report(
                doc,
                (*base, "analysis", "startingStep"),
                f"startingStep {start} is past the last step (there are {len(steps)} steps, "
                "numbered from 0)",
            )


def _step_args(linter: Linter, doc: Doc, path: Path_, analysis: dict[str, Any]) -> None:
    """Arguments against the templates found in the linted files (others cannot be known)."""
    given = {a.get("name") for a in analysis.get("args") or [] if isinstance(a, dict)}
    refs = [r for r in analysis.get("templates") or [] if isinstance(r, dict)]
    found: list[Doc] = []
    for j, ref in enumerate(refs):
        kind = "ClusterAnalysisTemplate" if ref.get("clusterScope") else "AnalysisTemplate"
        template = next(
            (d for d in linter.docs if d.kind == kind and d.name == ref.get("templateName")),
            None,
        )
        if template is None:
            continue
        found.append(template)
        for a in (template.data.get("spec") or {}).get("args") or []:
            if not isinstance(a, dict) or "value" in a or "valueFrom" in a:
                continue
            if a.get("name") not in given:
                linter.report(
                    doc,
                    (*path, "templates", j),
                    f"{kind} {template.name} needs argument {a.get('name')!r} "
                    f"({template.file}:{template.start}); add it to args",
                )
    if not refs or len(found) < len(refs):
        return  # a template lives elsewhere: its arguments are unknown here
    declared = {
        a.get("name")
        for t in found
        for a in (t.data.get("spec") or {}).get("args") or []
        if isinstance(a, dict)
    }
    for k, a in enumerate(analysis.get("args") or []):
        if isinstance(a, dict) and a.get("name") not in declared:
            linter.report(
                doc,
                (*path, "args", k),
                f"argument {a.get('name')!r} is declared by none of the templates",
            )


# -- CEL validation rules ----------------------------------------------------------


def cel_to_expr(rule: str) -> str:
    """A CEL rule of the subset okra's CRDs use, as an expr condition over `result`."""
    s = re.sub(
        r"\[([^\[\]]*)\]\.filter\(\s*x\s*,\s*x\s*\)\.size\(\)", r"len(filter([\1], {#}))", rule
    )

    # uniqueness: `L.all(a, L.exists_one(b, b.k == a.k))`, every element's key once in L
    s = re.sub(
        r"(self(?:\.[A-Za-z_]\w*)+)\.all\((\w+),\s*\1\.exists_one\((\w+),\s*"
        r"\3\.(\w+)\s*==\s*\2\.\4\)\)",
        r"all(\1, {let key = #.\4; one(\1, {#.\4 == key})})",
        s,
    )

    s = _quantifiers(s)

    def has(m: re.Match[str]) -> str:
        parts = m.group(1).split(".")[1:]
        return "(result" + "".join(f"?.{p}" for p in parts) + " != nil)"

    s = re.sub(r"has\((self(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\)", has, s)
    s = re.sub(r"size\(", "len(", s)
    s = re.sub(
        r"\bself((?:\.[A-Za-z_][A-Za-z0-9_]*)+)",
        lambda m: "result" + m.group(1).replace(".", "?."),
        s,
    )
    s = re.sub(r"\bself\b(?![.\w])", "result", s)  # the object itself: `size(self)`
    if re.search(r"\bself\b", s):
        raise ValueError(f"rule {rule!r} uses `self` in a way lint cannot check")
    return s


def _quantifiers(rule: str) -> str:
    """`L.exists(v, P)` and `L.all(v, P)` over a list of `self` as expr's `any(L, {P})` and
    `all(L, {P})`, `v` in P being the element (`#`)."""
    pattern = re.compile(r"(self(?:\.[A-Za-z_]\w*)+)\.(exists|all)\((\w+),\s*")
    while m := pattern.search(rule):
        depth, end = 1, m.end()
        while end < len(rule) and depth:
            depth += {"(": 1, ")": -1}.get(rule[end], 0)
            end += 1
        body, var = rule[m.end() : end - 1], m.group(3)
        if re.search(r"\bself\b", body):
            break  # nested over `self` (the uniqueness rule): left to its own translation
        body = re.sub(
            rf"has\({var}((?:\.[A-Za-z_]\w*)+)\)",
            lambda h: "(#" + h.group(1).replace(".", "?.") + " != nil)",
            body,
        )
        body = re.sub(
            rf"\b{var}((?:\.[A-Za-z_]\w*)+)", lambda h: "#" + h.group(1).replace(".", "?."), body
        )
        fn = "any" if m.group(2) == "exists" else "all"
        rule = f"{rule[: m.start()]}{fn}({m.group(1)}, {{{body}}}){rule[end:]}"
    return rule


def _rules(
    schema: dict[str, Any], data: Any, path: Path_
) -> Iterator[tuple[Path_, dict[str, Any], Any]]:
    """(path, rule, value) for every validation rule whose object is present in `data`."""
    if data is None:
        return
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule, data
    if isinstance(data, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in data:
                yield from _rules(sub, data[key], (*path, key))
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in data.items():
                if key not in (schema.get("properties") or {}):
                    yield from _rules(extra, value, (*path, key))
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for i, value in enumerate(data):
            yield from _rules(schema["items"], value, (*path, i))


@functools.cache
def _openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The CRD's schema of `model`, made once (about 0.7 s a kind)."""
    from okra_runtime.crdgen import openapi_schema

    return openapi_schema(model)


def _cel(linter: Linter, doc: Doc, model: type[BaseModel]) -> None:
    from okra_controllers.analysis.expr import ExprError, evaluate_condition

    schema = _openapi_schema(model)
    for path, rule, value in _rules(schema, doc.data, ()):
        source = str(rule.get("rule", ""))
        try:
            ok = evaluate_condition(cel_to_expr(source), value)
        except (ExprError, ValueError) as e:
            if isinstance(e, ExprError) and "type" in str(e).lower():
                continue  # a wrong type is the schema's error, reported above
            linter.report(
                doc, path, f"validation rule not checked by lint ({source}): {e}", "warning"
            )
            continue
        if not ok:
            linter.report(doc, path, str(rule.get("message") or f"fails {source}"))


# -- the command -----------------------------------------------------------------


def lint_texts(texts: list[tuple[str, str]]) -> Linter:
    linter = Linter()
    for file, text in texts:
        load(file, text, linter)
    known = models()
    for doc in linter.docs:
        lint_doc(linter, doc, known)
    linter.problems.sort(key=lambda p: (p.file, p.line))
    return linter


def cmd_lint(args: argparse.Namespace) -> int:
    texts = []
    for f in args.files:
        try:
            texts.append((f, sys.stdin.read() if f == "-" else Path(f).read_text(encoding="utf-8")))
        except OSError as e:
            print(f"{f}: cannot read: {e.strerror}", file=sys.stderr)
            return 1
    linter = lint_texts(texts)
    for p in linter.problems:
        print(p)
    errors = len(linter.errors)
    checked = sum(
        1
        for d in linter.docs
        if d.data.get("apiVersion", "").split("/")[0] in ("okra.mumo.co", "argoproj.io")
    )
    print(
        f"{len(args.files)} file(s), {checked} object(s) checked: "
        f"{errors} error(s), {len(linter.problems) - errors} warning(s)",
        file=sys.stderr,
    )
    return 1 if errors else 0
