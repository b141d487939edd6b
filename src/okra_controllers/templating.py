"""`{{…}}` placeholders in user-written text, substituted from variables the caller provides.

One renderer for every template okra fills in, so a placeholder means the same thing and a
missing variable reads the same everywhere:

- ClusterSet labels and annotations: `{{.awseks.cluster.name}}`, `{{.awseks.cluster.tags.KEY}}`;
- AWSTargetGroupSet templates: those, plus `{{.cluster.name}}` and `{{.cluster.labels.KEY}}`;
- a Check's provider: `{{.Vars.NAME}}`;
- AnalysisTemplate metrics: `{{args.NAME}}` (Argo Rollouts' spelling, no leading dot);
- notification bodies: `{{cell}}`, `{{.message}}`, …;
- ProgressiveRollout webhooks: `{{revision}}`, `{{stage}}`, `{{clusters}}`.

A placeholder is `{{`, optional spaces, a path, optional spaces, `}}`. The path is dot-separated
names looked up in nested mappings; a key that itself contains dots (an AWS tag such as
`kubernetes.io/role`) is found too: at each level the longest run of the remaining names that is
a key wins. Which placeholders belong to a caller is the `Syntax`: whether the path starts with a
dot, and which first names (roots) it owns. Anything else in `{{…}}` (a Go template meant for
Argo CD, another tool's placeholder) is left exactly as written.

Why a missing variable is an error and not an empty string: a label silently emptied makes a
selector miss (or match) a cluster without anyone noticing. `TemplateError` names the
placeholder and what was there instead; callers put it in their own context (which object, which
field). Values are inserted as text (`str`, with `true`/`false` for booleans); `escape="json"`
inserts them escaped for the inside of a JSON string, for templates applied to a document's JSON.

Pure functions only: no I/O, no state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from okra_runtime.labels import LABEL_VALUE_RULE, valid_label_value

__all__ = [
    "ARGS",
    "DOTTED",
    "Syntax",
    "TemplateError",
    "placeholders",
    "render",
    "render_labels",
    "render_strings",
]

_PLACEHOLDER: Final = re.compile(r"\{\{\s*(\.?)([^\s{}.][^\s{}]*)\s*\}\}")

Escape = Literal["json"] | None


class TemplateError(ValueError):
    """A placeholder could not be filled; `placeholder` is it as written, `path` its names."""

    def __init__(self, message: str, *, placeholder: str = "", path: str = "") -> None:
        super().__init__(message)
        self.placeholder = placeholder
        self.path = path


@dataclass(frozen=True, slots=True)
class Syntax:
    """Which `{{…}}` are placeholders for a caller.

    `dot`: "required" (`{{.a.b}}`), "none" (`{{args.x}}`) or "optional" (both spellings).
    `roots`: the first names the caller owns; a placeholder under another root is not the
    caller's and is left as written. None: every placeholder of the right spelling is the
    caller's (an unknown root is then an error)."""

    dot: Literal["required", "none", "optional"] = "required"
    roots: frozenset[str] | None = None

    def owns(self, dot: str, path: str) -> bool:
        if (self.dot == "required" and not dot) or (self.dot == "none" and dot):
            return False
        return self.roots is None or path.split(".", 1)[0] in self.roots


DOTTED: Final = Syntax()
"""`{{.a.b.c}}`, every root the caller's (ClusterSet, AWSTargetGroupSet)."""
ARGS: Final = Syntax(dot="none", roots=frozenset({"args"}))
"""Argo Rollouts' `{{args.NAME}}`."""


def _spelled(dot: str, path: str) -> str:
    return "{{" + dot + path + "}}"


def _keys(mapping: Mapping[str, Any]) -> str:
    names = sorted(str(k) for k in mapping)
    return ", ".join(names) if names else "none"


def _lookup(variables: Mapping[str, Any], dot: str, path: str) -> Any:
    """The value at `path`; a key containing dots matches the longest run of names."""
    names = path.split(".")
    value: Any = variables
    where: list[str] = []
    i = 0
    while i < len(names):
        if not isinstance(value, Mapping):
            raise TemplateError(
                f"template variable {_spelled(dot, path)} is not defined: "
                f"{'.'.join(where)} is a single value, it has no {names[i]!r}",
                placeholder=_spelled(dot, path),
                path=path,
            )
        for j in range(len(names), i, -1):
            key = ".".join(names[i:j])
            if key in value:
                value = value[key]
                where.append(key)
                i = j
                break
        else:
            inside = f" ({'.'.join(where)} has: {_keys(value)})" if where else ""
            raise TemplateError(
                f"template variable {_spelled(dot, path)} is not defined{inside}",
                placeholder=_spelled(dot, path),
                path=path,
            )
    if isinstance(value, (Mapping, list, tuple)):
        raise TemplateError(
            f"template variable {_spelled(dot, path)} is not a single value",
            placeholder=_spelled(dot, path),
            path=path,
        )
    return value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_MISSING_IS_ERROR: Final = object()


def render(
    text: str,
    variables: Mapping[str, Any],
    syntax: Syntax = DOTTED,
    *,
    escape: Escape = None,
    missing: Any = _MISSING_IS_ERROR,
) -> str:
    """`text` with each of the caller's placeholders replaced by its variable's value.

    Raises TemplateError for a placeholder whose variable is not defined or is not a single
    value, unless `missing` is given: then that text is inserted instead (notification bodies,
    where an absent field reads as empty)."""

    def repl(m: re.Match[str]) -> str:
        dot, path = m.group(1), m.group(2)
        if not syntax.owns(dot, path):
            return m.group(0)
        try:
            value = _lookup(variables, dot, path)
        except TemplateError:
            if missing is _MISSING_IS_ERROR:
                raise
            value = missing
        out = _text(value)
        return json.dumps(out)[1:-1] if escape == "json" else out

    return _PLACEHOLDER.sub(repl, text)


def render_strings(value: Any, variables: Mapping[str, Any], syntax: Syntax = DOTTED) -> Any:
    """`value` (JSON-shaped) with `render` applied to every string in it; keys stay as they are."""
    if isinstance(value, str):
        return render(value, variables, syntax)
    if isinstance(value, Mapping):
        return {k: render_strings(v, variables, syntax) for k, v in value.items()}
    if isinstance(value, list):
        return [render_strings(v, variables, syntax) for v in value]
    return value


def placeholders(text: str, syntax: Syntax = DOTTED) -> Iterator[str]:
    """The paths of the caller's placeholders in `text`, in order (repeats included)."""
    for m in _PLACEHOLDER.finditer(text):
        if syntax.owns(m.group(1), m.group(2)):
            yield m.group(2)


def render_labels(
    labels: Mapping[str, str], variables: Mapping[str, Any], syntax: Syntax = DOTTED
) -> dict[str, str]:
    """Label values rendered; TemplateError for a value the API server would reject."""
    out = {}
    for key, template in labels.items():
        value = render(template, variables, syntax)
        if not valid_label_value(value):
            raise TemplateError(
                f"label {key}={value!r} (from template {template!r}) is not a valid label value:"
                f" {LABEL_VALUE_RULE}"
            )
        out[key] = value
    return out
