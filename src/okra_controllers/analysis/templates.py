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

from okra_controllers.api.kinds import (
    ANALYSIS_TEMPLATE,
    ARGO_ANALYSIS_TEMPLATE,
    ARGO_CLUSTER_ANALYSIS_TEMPLATE,
    CLUSTER_ANALYSIS_TEMPLATE,
)
from okra_controllers.api.v1alpha1.analysis import (
    AnalysisRunSpec,
    AnalysisTemplateSpec,
    Argument,
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
) -> dict[str, Any]:
    """An AnalysisRun object (not yet created) combining `templates`, with `args`
    overriding the templates' defaults."""
    metrics: list[Any] = []
    template_args: dict[str, Argument] = {}
    dry_run: list[Any] = []
    retention: list[Any] = []
    seen: dict[str, str] = {}
    judgment = None
    for ref in templates:
        spec = _spec(await find_template(client, namespace, ref))
        judgment = judgment or spec.judgment
        for m in spec.metrics:
            if m.name in seen:
                raise TemplateError(
                    f"metric {m.name!r} is defined by both template "
                    f"{seen[m.name]!r} and {ref.template_name!r}"
                )
            seen[m.name] = ref.template_name
            metrics.append(m)
        for a in spec.args or ():
            template_args.setdefault(a.name, a)
        dry_run.extend(spec.dry_run or ())
        retention.extend(spec.measurement_retention or ())
    merged: dict[str, Argument] = dict(template_args)
    for a in args:
        merged[a.name] = a
    try:
        run_spec = AnalysisRunSpec(
            metrics=metrics,
            args=list(merged.values()) or None,
            dry_run=dry_run or None,
            measurement_retention=retention or None,
            judgment=judgment,
        )
    except ValidationError as e:
        raise TemplateError(_short(e)) from None
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
        "kind": "AnalysisRun",
        "metadata": meta,
        "spec": run_spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
    }
