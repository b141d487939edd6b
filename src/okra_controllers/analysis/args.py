"""Analysis arguments: merge a template's with the caller's, resolve
`valueFrom` (Secrets, fields of the owning object), and substitute
`{{args.NAME}}` into metrics, as Argo Rollouts does (on the metric's JSON, so a
value lands escaped inside any string field)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

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


async def resolve_args(
    args: Sequence[Argument],
    namespace: str,
    read_secret: SecretLookup,
    owner: dict[str, Any] | None,
) -> tuple[dict[str, str], list[str]]:
    """Values of every argument, and the secret values among them (to redact)."""
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
            try:
                data = await read_secret(namespace, ref.name)
            except Exception as e:
                raise ArgumentError(f"{where}: {e}") from e
            if ref.key not in data:
                raise ArgumentError(
                    f"{where}: Secret {namespace}/{ref.name} has no key {ref.key!r}"
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
            raise ArgumentError(f"{where}: no value given (set value or valueFrom)")
    return values, secrets


def substitute(metric: Metric, values: dict[str, str]) -> Metric:
    """The metric with every `{{args.NAME}}` replaced; raises ArgumentError for an
    argument that is referenced but not declared."""
    raw = metric.model_dump_json(by_alias=True, exclude_none=True)
    try:
        rendered = render(raw, {"args": values}, ARGS, escape="json")
    except TemplateError as e:
        raise ArgumentError(f"metrics[{metric.name}]: {e}") from None
    return Metric.model_validate_json(rendered)


def referenced_args(metric: Metric) -> set[str]:
    """Names of the arguments the metric uses (`{{args.NAME}}` → NAME)."""
    raw = metric.model_dump_json(by_alias=True, exclude_none=True)
    return {p.removeprefix("args.") for p in placeholders(raw, ARGS) if p.startswith("args.")}
