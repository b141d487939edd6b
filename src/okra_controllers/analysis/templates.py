"""Find analysis templates and instantiate them as AnalysisRuns.

Templates are looked up by name in okra's group first, then, when the Argo
Rollouts CRDs are installed, in `argoproj.io/v1alpha1`, so templates written for
Argo Rollouts work unchanged. Runs are always okra AnalysisRuns: okra never
creates `argoproj.io` AnalysisRuns (an Argo Rollouts controller would race it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from okra_controllers.analysis.args import pinned_field_refs
from okra_controllers.api.kinds import (
    ANALYSIS_RUN,
    ANALYSIS_TEMPLATE,
    ARGO_ANALYSIS_TEMPLATE,
    ARGO_CLUSTER_ANALYSIS_TEMPLATE,
    CLUSTER_ANALYSIS_TEMPLATE,
)
from okra_controllers.api.v1alpha1.analysis import (
    AnalysisRunSpec,
    AnalysisTemplateSpec,
    Argument,
    DryRun,
    MeasurementRetention,
)
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.api.validation import problems
from okra_runtime.client import Client
from okra_runtime.errors import NoKindMatchError, NotFoundError

TEMPLATE_KINDS = {
    False: (ANALYSIS_TEMPLATE, ARGO_ANALYSIS_TEMPLATE),
    True: (CLUSTER_ANALYSIS_TEMPLATE, ARGO_CLUSTER_ANALYSIS_TEMPLATE),
}


class TemplateError(ValueError):
    """A template is missing or cannot be used; the message says which and why."""


@dataclass(frozen=True)
class TemplateRef:
    template_name: str
    cluster_scope: bool = False


async def find_template(client: Client, namespace: str, ref: TemplateRef) -> dict[str, Any]:
    looked = []
    for gvk in TEMPLATE_KINDS[ref.cluster_scope]:
        looked.append(gvk.api_version)
        try:
            return await client.get(
                gvk, ref.template_name, None if ref.cluster_scope else namespace
            )
        except (NotFoundError, NoKindMatchError):
            continue
    kind = "ClusterAnalysisTemplate" if ref.cluster_scope else "AnalysisTemplate"
    where = "" if ref.cluster_scope else f" in namespace {namespace}"
    raise TemplateError(
        f"{kind} {ref.template_name!r} not found{where} (looked in {' and '.join(looked)})"
    )


def _spec(template: dict[str, Any]) -> AnalysisTemplateSpec:
    try:
        return AnalysisTemplateSpec.model_validate(template.get("spec") or {})
    except ValidationError as e:
        meta = template.get("metadata", {})
        raise TemplateError(
            f"{template.get('kind')} {meta.get('name')!r} "
            f"({template.get('apiVersion')}) is not usable: {_short(e)}"
        ) from None


def _short(e: ValidationError) -> str:
    return "; ".join(f"spec.{problem}" for problem in problems(e)[:5])


def flatten(
    specs: Sequence[tuple[str, AnalysisTemplateSpec]], args: Sequence[Argument] = ()
) -> AnalysisRunSpec:
    """The run spec combining templates (name, spec) in order, with the caller's `args`, by
    Argo Rollouts' rules (`FlattenTemplates`, `MergeArgs`), with its words:

    - a metric name in two templates: `two metrics have the same name 'NAME'`;
    - the same `dryRun` / `measurementRetention` rule twice: `two Dry-Run metric rules have
      the same name 'RULE'` / `two Measurement Retention metric rules have the same name ...`;
    - an argument in two templates with different values: ``Argument `NAME` specified
      multiple times with different values: 'A', 'B'``; one without a value takes the other's;
    - the caller's value (or valueFrom) replaces a template's; an argument no template
      declares is dropped; one left without a value: `args.NAME was not resolved`."""
    metrics: list[Any] = []
    merged: list[Argument] = []
    dry_run: list[DryRun] = []
    retention: list[MeasurementRetention] = []
    seen: dict[str, str] = {}
    judgment = None
    for template_name, spec in specs:
        judgment = judgment or spec.judgment
        for m in spec.metrics:
            if m.name in seen:
                raise TemplateError(
                    f"two metrics have the same name '{m.name}' "
                    f"(templates {seen[m.name]!r} and {template_name!r})"
                )
            seen[m.name] = template_name
            metrics.append(m)
        for a in spec.args or ():
            _add_arg(merged, a)
        dry_run.extend(spec.dry_run or ())
        retention.extend(spec.measurement_retention or ())
    for label, rules in (("Dry-Run", dry_run), ("Measurement Retention", retention)):
        names: set[str] = set()
        for rule in rules:
            if rule.metric_name in names:
                raise TemplateError(
                    f"two {label} metric rules have the same name '{rule.metric_name}'"
                )
            names.add(rule.metric_name)
    given = {a.name: a for a in args}
    for i, a in enumerate(merged):
        g = given.get(a.name)
        if g is not None and g.value is not None:
            merged[i] = Argument(name=a.name, value=g.value)
        elif g is not None and g.value_from is not None:
            merged[i] = Argument(name=a.name, value_from=g.value_from)
    for a in merged:
        if a.value is None and a.value_from is None:
            raise TemplateError(f"args.{a.name} was not resolved: no value given by the caller")
    try:
        return AnalysisRunSpec(
            metrics=metrics,
            args=merged or None,
            dry_run=dry_run or None,
            measurement_retention=retention or None,
            judgment=judgment,
        )
    except ValidationError as e:
        raise TemplateError(_short(e)) from None


def _add_arg(merged: list[Argument], new: Argument) -> None:
    for i, prev in enumerate(merged):
        if prev.name != new.name:
            continue
        if prev.value is not None and new.value is not None and prev.value != new.value:
            raise TemplateError(
                f"Argument `{prev.name}` specified multiple times with different values: "
                f"'{prev.value}', '{new.value}'"
            )
        if prev.value is None:
            merged[i] = new
        return
    merged.append(new)


async def build_run(
    client: Client,
    *,
    namespace: str,
    name: str,
    templates: Sequence[TemplateRef],
    args: Sequence[Argument] = (),
    labels: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    generate_name: bool = False,
    pin_from: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An AnalysisRun object (not yet created) combining `templates`, with `args`
    overriding the templates' defaults (`flatten`); with `pin_from`, its `fieldRef`
    arguments read from that object now (`pinned_field_refs`)."""
    specs = [
        (ref.template_name, _spec(await find_template(client, namespace, ref))) for ref in templates
    ]
    run_spec = flatten(specs, args)
    if pin_from is not None and run_spec.args:
        run_spec.args = pinned_field_refs(run_spec.args, pin_from)
    meta: dict[str, Any] = {"namespace": namespace, "labels": dict(labels or {})}
    meta["generateName" if generate_name else "name"] = name
    if owner is not None:
        om = owner["metadata"]
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": om["name"],
                "uid": om["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": ANALYSIS_RUN.kind,
        "metadata": meta,
        "spec": run_spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
    }
