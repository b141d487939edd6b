"""Analysis arguments: merge a template's with the caller's, resolve
`valueFrom` (Secrets, fields of the owning object), and substitute
`{{args.NAME}}` into metrics, as Argo Rollouts does (on the metric's JSON, so a
value lands escaped inside any string field)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import ValidationError

from okra_controllers.api.v1alpha1.analysis import Argument, Metric
from okra_controllers.templating import ARGS, TemplateError, placeholders, render


class ArgumentError(ValueError):
    """An argument cannot be resolved; the message names it and says why."""


def merge_args(
    template_args: Sequence[Argument] | None, given: Sequence[Argument] | None
) -> list[Argument]:
    """Template arguments, with values given by the caller taking precedence;
    arguments only the caller knows are appended."""
    merged: dict[str, Argument] = {a.name: a for a in template_args or ()}
    for a in given or ():
        if a.name in merged and a.value is None and a.value_from is None:
            continue
        merged[a.name] = a
    return list(merged.values())


SecretLookup = Callable[[str, str], Awaitable[dict[str, str]]]


def field_value(obj: dict[str, Any], path: str) -> str:
    """`metadata.labels['app']` / `spec.x.y` / `metadata.name` in `obj`."""
    cur: Any = obj
    for part in re.findall(r"[^.\[\]]+|\['[^']*'\]|\[\"[^\"]*\"\]", path):
        key = part[2:-2] if part.startswith("[") else part
        if not isinstance(cur, dict) or key not in cur:
            raise ArgumentError(f"fieldRef {path!r} does not exist on the owning object")
        cur = cur[key]
    return cur if isinstance(cur, str) else json.dumps(cur)


def pinned_field_refs(args: Sequence[Argument], owner: dict[str, Any]) -> list[Argument]:
    """`args` with each `fieldRef` read from `owner` once, as a value: Argo Rollouts reads a
    run's field references from its Rollout when it creates the run, so a run measures what
    its rollout was when it started, and the owner's later changes (a completed rollout clears
    `status.canaryVersion`) never reach it. A reference `owner` does not have is kept, for the
    run to report as it would have."""
    out: list[Argument] = []
    for a in args:
        vf = a.value_from
        if a.value is None and vf is not None and vf.field_ref and vf.secret_key_ref is None:
            with contextlib.suppress(ArgumentError):
                a = Argument(name=a.name, value=field_value(owner, vf.field_ref.field_path))
        out.append(a)
    return out


async def resolve_args(
    args: Sequence[Argument],
    namespace: str,
    read_secret: SecretLookup | None,
    owner: dict[str, Any] | None,
) -> tuple[dict[str, str], list[str]]:
    """Values of every argument, and the secret values among them (to redact). Without
    `read_secret`, a Secret argument reads as `SECRET_PLACEHOLDER` (to plan and validate)."""
    values: dict[str, str] = {}
    secrets: list[str] = []
    for i, a in enumerate(args):
        where = f"args[{i}] ({a.name})"
        if a.value is not None and a.value_from is not None:
            raise ArgumentError(f"{where}: set value or valueFrom, not both")
        if a.value is not None:
            values[a.name] = a.value
        elif a.value_from is not None and a.value_from.secret_key_ref is not None:
            ref = a.value_from.secret_key_ref
            if read_secret is None:
                values[a.name] = SECRET_PLACEHOLDER
                continue
            try:
                data = await read_secret(namespace, ref.name)
            except Exception as e:
                raise ArgumentError(f"{e} ({where})") from e
            if ref.key not in data:
                raise ArgumentError(
                    f"key '{ref.key}' does not exist in secret '{ref.name}' "
                    f"({where}, namespace {namespace})"
                )
            values[a.name] = data[ref.key]
            secrets.append(data[ref.key])
        elif a.value_from is not None and a.value_from.field_ref is not None:
            if owner is None:
                raise ArgumentError(f"{where}: fieldRef needs an owning object")
            try:
                values[a.name] = field_value(owner, a.value_from.field_ref.field_path)
            except ArgumentError as e:
                raise ArgumentError(f"{where}: {e}") from None
        else:
            raise ArgumentError(
                f"args.{a.name} was not resolved: {where} has no value (set value or valueFrom)"
            )
    return values, secrets


_TAG = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
OKRA_TAGS = ("judge.",)
"""Placeholders okra fills in itself later (a judged metric's side), left as written."""

SECRET_PLACEHOLDER = "temp-for-secret"
"""What a Secret argument reads as while a run is planned and validated (Argo's value): the
Secret itself is read only to measure."""


def substitute(metric: Metric, values: dict[str, str]) -> Metric:
    """The metric with every `{{args.NAME}}` replaced in every field, as Argo Rollouts does
    (on the metric's JSON, so numbers and durations written as strings are substituted too).

    Raises ArgumentError with Argo's words, `failed to resolve {{TAG}}`, for a placeholder
    that is not a declared argument (any `{{…}}` but okra's own `{{judge.…}}`), and for a
    substituted metric that is no longer well formed, naming the field."""
    raw = metric.model_dump_json(by_alias=True, exclude_none=True)
    missing = [p for p in placeholders(raw, ARGS) if p.removeprefix("args.") not in values]
    if missing:  # Argo names the last one it could not fill
        try:
            render("{{" + missing[-1] + "}}", {"args": values}, ARGS)
        except TemplateError as e:
            raise ArgumentError(f"failed to resolve {e.placeholder} ({e})") from None
    rendered = render(raw, {"args": values}, ARGS, escape="json")
    for m in _TAG.finditer(rendered):
        tag = m.group(1).strip()
        if not tag.startswith(OKRA_TAGS):
            raise ArgumentError(
                f"failed to resolve {{{{{m.group(1)}}}}} (metric {metric.name!r}: "
                "only {{args.NAME}} of a declared argument is substituted)"
            )
    try:
        return Metric.model_validate_json(rendered)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ArgumentError(
            f"metric {metric.name!r} with its arguments substituted: {where}: {err['msg']}"
        ) from None


def referenced_args(metric: Metric) -> set[str]:
    """Names of the arguments the metric uses (`{{args.NAME}}` → NAME)."""
    raw = metric.model_dump_json(by_alias=True, exclude_none=True)
    return {p.removeprefix("args.") for p in placeholders(raw, ARGS) if p.startswith("args.")}
