"""Every optional field of a CRD schema, set one at a time on a valid object: the variants
the field-walking test (test/integration/test_every_field_acts.py) judges.

`variants(schema, base)` walks the structural schema of a kind (its `openAPIV3Schema`)
below `spec` and yields, per field the base object leaves unset (or sets to a value a user
could change), one copy of the base with just that field set to a valid value other than
its default:

- a scalar: `true` for a default-false boolean (and the reverse), the next integer or number
  in range, an enum's first other value, a string matching the field's pattern (from
  `PATTERN_VALUES`), a date-time, or a word;
- an object the base lacks: created with its required fields (each a valid value), then
  each of its optional fields set on top, one at a time; an object with no required field
  is not a variant of its own (`{}` is the default), only its fields are;
- a list of objects: one element (the base's first, or a new one with its required
  fields), each field of it walked as above; a list of scalars: one value;
- a map, or an object whose fields are free (`x-kubernetes-preserve-unknown-fields`): one
  entry, `walked: walked`; an object whose fields are free beside declared ones (a spelling
  okra normalises, as a binding's `nodeSelector`), also each declared field as above.

Each variant is named by its path with `[]` for a list element (`spec.a[].b`). The
variants are plain data: what a user could write, before the API server's defaults.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]

ELB_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/walked/1"
ROLE_ARN = "arn:aws:iam::123456789012:role/walked"
PATTERN_VALUES: dict[str, tuple[str, ...]] = {
    "^arn:[a-z0-9-]+:elasticloadbalancing:": (ELB_ARN,),
    "^arn:[a-z0-9-]+:elasticloadbalancing:.+:targetgroup/": (ELB_ARN,),
    "^arn:[a-z0-9-]+:iam::": (ROLE_ARN,),
    r"^arn:[a-z0-9-]+:iam::[0-9]{12}:role/.+": (ROLE_ARN,),
    r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$": ("7s", "9s"),
    r"^([0-9]*[1-9][0-9]*(\.[0-9]+)?(ms|s|m|h))+$": ("7s", "9s"),
    r"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+|.*\{\{\s*args\.[^{}]+\}\}.*)$": (
        "7s",
        "9s",
    ),
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": ("walked", "walked-2"),
    r"^argoproj\.io(/v1alpha1)?$": ("argoproj.io", "argoproj.io/v1alpha1"),
    "^https?://": ("https://walked.example/hook", "http://walked.example/hook"),
    r"^[0-9A-Za-z][A-Za-z0-9_-]*$": ("walked", "walked-2"),
    r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$": ("walked", "walked2"),
    r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$": ("walked", "walked-2"),
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$": ("example.com/walked", "walked"),
    r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$": (
        "*/20 * * * *",
        "@hourly",
    ),
}
"""A valid value (two, to differ from a value already there) for each pattern okra's CRDs
use; a pattern missing here is an error of the walker, named with its field."""
DATE_TIMES = ("2026-01-01T00:10:00Z", "2026-01-01T00:20:00Z")


class WalkerError(ValueError):
    """The walker cannot make a valid value for a field (say how, in `PATTERN_VALUES`)."""


@dataclass(frozen=True)
class Variant:
    path: str
    obj: Json


def variants(schema: Json, base: Json) -> Iterator[Variant]:
    """One variant of `base` per optional field below `spec` (see the module's docstring)."""
    spec_schema = schema["properties"]["spec"]
    for path, spec in _walk(spec_schema, base.get("spec") or {}, "spec"):
        obj = copy.deepcopy(base)
        obj["spec"] = spec
        yield Variant(path, obj)


def _walk(schema: Json, value: Json, path: str) -> Iterator[tuple[str, Json]]:
    """(path, a copy of `value` with one field below it set) for every field of `schema`."""
    required = set(schema.get("required") or [])
    for name, sub in (schema.get("properties") or {}).items():
        where = f"{path}.{name}"
        have = value.get(name)
        if _is_object(sub):
            created = have is None
            node = have if have is not None else minimal(sub, where)
            if created and sub.get("required"):
                yield where, {**value, name: node}
            for p, inner in _walk(sub, node, where):
                yield p, {**value, name: inner}
        elif _is_object_list(sub):
            items = sub["items"]
            first = have[0] if have else minimal(items, f"{where}[]")
            rest = list(have[1:]) if have else []
            if not have and items.get("required"):
                yield f"{where}[]", {**value, name: [first, *rest]}
            for p, inner in _walk(items, first, f"{where}[]"):
                yield p, {**value, name: [inner, *rest]}
        elif name not in required or have is not None:
            if name in required:
                continue  # the shape's own value: its kinds are the base objects
            yield where, {**value, name: leaf(sub, have, where)}
            if _is_free_with_fields(sub):  # its declared fields too, beside the free entry
                node = have if isinstance(have, dict) else {}
                for p, inner in _walk(sub, node, where):
                    yield p, {**value, name: inner}


def _is_object(schema: Json) -> bool:
    return (
        schema.get("type") == "object"
        and bool(schema.get("properties"))
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    )


def _is_free_with_fields(schema: Json) -> bool:
    return (
        schema.get("type") == "object"
        and bool(schema.get("properties"))
        and bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    )


def _is_object_list(schema: Json) -> bool:
    return schema.get("type") == "array" and _is_object(schema.get("items") or {})


def minimal(schema: Json, path: str) -> Any:
    """A valid value with only the required fields (each a valid value)."""
    if _is_object(schema):
        return {
            name: minimal(schema["properties"][name], f"{path}.{name}")
            for name in schema.get("required") or []
        }
    if schema.get("type") == "array":
        n = max(int(schema.get("minItems") or 0), 0)
        return [minimal(schema.get("items") or {}, f"{path}[]") for _ in range(n)]
    return leaf(schema, None, path)


def leaf(schema: Json, have: Any, path: str) -> Any:
    """A valid value of a field other than `have` and its default."""
    avoid = [have, schema.get("default")]
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        return 7 if have != 7 else 9
    if kind == "boolean":
        return not (have if have is not None else bool(schema.get("default")))
    if kind in ("integer", "number"):
        return _number(schema, avoid, kind == "integer")
    if kind == "string":
        return _string(schema, avoid, path)
    if kind == "array":
        items = schema.get("items") or {}
        n = max(int(schema.get("minItems") or 1), 1)
        out: list[Any] = []
        for _ in range(n):
            out.append(leaf(items, out[-1] if out else None, f"{path}[]"))
        return out
    if kind == "object":  # a map, or free fields
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("type") not in (None, "string"):
            return {"walked": minimal(extra, f"{path}.walked")}
        return {"walked": "walked"}
    raise WalkerError(f"{path}: no value for a field of type {kind!r}")


def _number(schema: Json, avoid: list[Any], integer: bool) -> int | float:
    low = schema.get("minimum")
    high = schema.get("maximum")
    start = next((a for a in avoid if isinstance(a, (int, float))), low if low is not None else 0)
    step = 1 if integer else 0.5
    middle = (low + high) / 2 if low is not None and high is not None else None
    for candidate in (start + step, start + 2 * step, start - step, low, high, middle):
        if candidate is None or candidate in avoid:
            continue
        above = low is None or candidate > low or (candidate == low and not _excl(schema, "Min"))
        below = high is None or candidate < high or (candidate == high and not _excl(schema, "Max"))
        if above and below:
            return int(candidate) if integer else float(candidate)
    raise ValueError(f"no number in [{low}, {high}] other than {avoid}")


def _excl(schema: Json, which: str) -> bool:
    return bool(schema.get(f"exclusive{which}imum"))


def _string(schema: Json, avoid: list[Any], path: str) -> str:
    have = avoid[0]
    if schema.get("enum"):
        enum = schema["enum"]  # another value than the base's; the default if no third
        return str(next((v for v in enum if v not in avoid), next(v for v in enum if v != have)))
    if schema.get("format") == "date-time":
        return next(v for v in DATE_TIMES if v not in avoid)
    pattern = schema.get("pattern")
    if pattern is not None:
        if pattern not in PATTERN_VALUES:
            raise WalkerError(f"{path}: no value known for pattern {pattern!r}")
        value = next(v for v in PATTERN_VALUES[pattern] if v not in avoid)
        assert re.search(pattern, value), (pattern, value)
        return value
    return next(v for v in ("walked", "walked-2") if v not in avoid)
