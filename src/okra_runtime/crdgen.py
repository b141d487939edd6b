"""Generate Kubernetes CustomResourceDefinitions from pydantic models.

Why: the pydantic models are the API. The CRD the API server enforces must say exactly what the
models say, so it is generated from them (as controller-gen generates CRDs from Go types) and a
check in CI fails when a committed CRD no longer matches its model.

Declaring a resource: the root model is the whole object. It has a `spec` model field and
usually a `status` one; `apiVersion`, `kind` and `metadata` are added by the generator (if the
model declares them, its definitions are ignored). Field names are the pydantic aliases, so use
camelCase aliases::

    class Widget(BaseModel):
        '''Widget is ... (the docstring becomes the schema's description).'''

        model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
        __crd__: ClassVar[CRDInfo] = CRDInfo(
            group="example.com", version="v1", kind="Widget", plural="widgets",
            printer_columns=(PrinterColumn("Size", "integer", ".spec.size"),),
        )
        spec: WidgetSpec
        status: WidgetStatus | None = None

`status` is never required: with the status subresource (the default) the API server drops
status on create. Printer columns get kubebuilder's Age column appended unless one shows
``.metadata.creationTimestamp`` already.

Generating: ``python -m okra_runtime.crdgen --out config/crd/bases pkg.api:Widget`` writes
``config/crd/bases/example.com_widgets.yaml``; an argument may also name a list or tuple of
models. With ``--check`` nothing is written: it exits 1 and lists the files that differ.

How Python maps to the structural OpenAPI v3 schema the API server needs:

- Nested models are inlined (no ``$ref``); a recursive model is an error. No ``title``.
- ``X | None`` is just X; such a field is not in ``required`` (only fields without a default
  are). ``nullable: true`` is never inferred: the API server drops a ``null`` given for a
  non-nullable field before validating, so a client that sends ``None`` for an unset field
  works, the stored object stays free of ``null`` and a CEL ``has(self.x)`` keeps meaning "x
  is set". A field that must keep ``null`` opts in with ``json_schema_extra={"nullable": True}``.
- ``Literal[...]`` and ``Enum`` become ``enum``; Field constraints become minimum, maximum,
  exclusiveMinimum/Maximum (as booleans beside minimum/maximum, the OpenAPI v3.0 form),
  minLength, maxLength, pattern, minItems, maxItems, multipleOf.
- ``default`` comes from a field's default when it is JSON-serialisable and not None (pydantic
  serialises it by alias; ``None`` entries inside an object default are left out).
  ``default_factory`` stays a Python-side default and is not published.
- ``description`` comes from ``Field(description=...)``, else from the attribute docstring (the
  string literal right below the field), else from the docstring of the field's model or Enum.
- ``dict[str, X]`` is an object with ``additionalProperties: X``; ``Any``, ``JsonValue`` and
  ``dict[str, Any]`` keep unknown fields (``x-kubernetes-preserve-unknown-fields``).
- ``int | str`` is ``x-kubernetes-int-or-string`` (no ``type``); constraints of either side
  (``ge`` on the int, ``pattern`` on the str) apply to values of that type.
- ``set[X]`` of scalars is a list with ``x-kubernetes-list-type: set``.
- ``datetime`` is ``format: date-time``; formats the API server would read differently from
  pydantic (``duration``: Go's "1h" vs ISO 8601 "PT1H"; ``binary``; ``time``) are dropped.
- ``json_schema_extra`` on a field or in ``model_config`` passes ``x-kubernetes-*`` keys
  through; validation rules of a field and of its model are both kept. A union of object
  models is an error: structural schemas cannot say it; use one model with optional fields and
  a CEL rule such as ``has(self.a) != has(self.b)``. Any other shape a structural schema
  cannot say (tuples, constrained map keys, ``bool | str``) is a `CRDGenerationError` naming
  the field, as is a keyword Kubernetes does not know (a typo in ``json_schema_extra``).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import itertools
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AliasChoices, AliasPath, BaseModel
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

__all__ = [
    "CRDGenerationError",
    "CRDInfo",
    "PrinterColumn",
    "crd_for",
    "crd_info",
    "main",
    "openapi_schema",
    "write_crds",
]

_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")


class CRDGenerationError(ValueError):
    """A model cannot be expressed as a CRD; the message names the field and the fix."""


@dataclass(frozen=True)
class PrinterColumn:
    """One `kubectl get` column (an `additionalPrinterColumns` entry)."""

    name: str
    type: str  # integer | number | string | boolean | date
    json_path: str  # e.g. ".status.phase"
    description: str = ""
    priority: int = 0  # > 0: shown only with `kubectl get -o wide`
    format: str | None = None

    def __post_init__(self) -> None:
        if self.type not in _COLUMN_TYPES:
            raise CRDGenerationError(
                f"printer column {self.name!r}: type {self.type!r} is not one of {_COLUMN_TYPES}"
            )
        if not self.json_path.startswith("."):
            raise CRDGenerationError(
                f"printer column {self.name!r}: json_path {self.json_path!r} must start with '.'"
            )


@dataclass(frozen=True)
class CRDInfo:
    """What a CRD says besides the schema. Set it on the root model as `__crd__`."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str | None = None  # default kind.lower()
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = True
    served: bool = True
    storage: bool = True

    def __post_init__(self) -> None:
        problems = []
        if "." not in self.group or self.group != self.group.lower():
            problems.append(f"group {self.group!r} must be a lowercase domain with a dot")
        version = self.version
        if not (version[:1].isalpha() and version.isalnum() and version == version.lower()):
            problems.append(f"version {self.version!r} must look like v1 or v1alpha1")
        if not self.kind[:1].isupper() or not self.kind.isalnum():
            problems.append(f"kind {self.kind!r} must be CamelCase")
        for label, value in (("plural", self.plural), ("singular", self.singular)):
            if value is not None and (value != value.lower() or not value.isalnum()):
                problems.append(f"{label} {value!r} must be lowercase letters and digits")
        if self.scope not in ("Namespaced", "Cluster"):
            problems.append(f"scope {self.scope!r} must be Namespaced or Cluster")
        if problems:
            raise CRDGenerationError(f"CRDInfo for {self.kind}: " + "; ".join(problems))

    @property
    def name(self) -> str:
        """The CRD's metadata.name: <plural>.<group>."""
        return f"{self.plural}.{self.group}"


# -- public API -------------------------------------------------------------------------------


def crd_info(model: type[BaseModel]) -> CRDInfo:
    """The `__crd__` declared on `model` itself (not inherited: a subclass is another API)."""
    info = vars(model).get("__crd__")
    if not isinstance(info, CRDInfo):
        raise CRDGenerationError(
            f"{model.__qualname__} declares no CRD: add "
            "`__crd__: ClassVar[CRDInfo] = CRDInfo(group=..., version=..., kind=..., plural=...)`"
        )
    return info


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural `openAPIV3Schema` of the whole object `model` describes."""
    raw = model.model_json_schema(
        by_alias=True, mode="validation", schema_generator=_SchemaGenerator
    )
    defs: dict[str, Any] = raw.pop("$defs", {})
    converter = _Converter(defs)
    stack: frozenset[str] = frozenset()
    while "$ref" in raw:  # a recursive root model is referenced from the top
        name = _ref_name(raw["$ref"])
        raw, stack = _merge(defs[name], _without(raw, "$ref")), stack | {name}
    props = dict(raw.get("properties", {}))
    for key in _OBJECT_KEYS:
        props.pop(key, None)
    if "spec" not in props:
        raise CRDGenerationError(f"{model.__qualname__}: the root model needs a `spec` field")
    raw = {
        **raw,
        "properties": props,
        "required": [k for k in raw.get("required", []) if k in props and k != "status"],
    }
    root = converter.convert(raw, model.__qualname__, stack)
    if root.get("properties", {}).get("spec", {}).get("type") != "object":
        raise CRDGenerationError(f"{model.__qualname__}.spec must be a model (an object)")
    root["properties"] = {**_OBJECT_PROPERTIES, **root["properties"]}
    root.pop("default", None)
    unshared: dict[str, Any] = _unshared(_ordered(root))
    return unshared


def crd_for(model: type[BaseModel]) -> dict[str, Any]:
    """The CustomResourceDefinition (apiextensions.k8s.io/v1) for `model`, as plain data."""
    info = crd_info(model)
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": f"{info.kind}List",
        "plural": info.plural,
        "singular": info.singular or info.kind.lower(),
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    version: dict[str, Any] = {
        "name": info.version,
        "served": info.served,
        "storage": info.storage,
    }
    if info.status_subresource:
        version["subresources"] = {"status": {}}
    columns = [_column(c) for c in info.printer_columns]
    if columns and not any(
        c["name"] == "Age" or c["jsonPath"] == ".metadata.creationTimestamp" for c in columns
    ):
        # kubectl shows Age by default only while a CRD declares no columns of its own.
        columns.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    if columns:
        version["additionalPrinterColumns"] = columns
    version["schema"] = {"openAPIV3Schema": openapi_schema(model)}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.name},
        "spec": {
            "group": info.group,
            "names": names,
            "scope": info.scope,
            "versions": [version],
        },
    }


def write_crds(models: Iterable[type[BaseModel]], out_dir: Path) -> list[Path]:
    """Write one `<group>_<plural>.yaml` per model into `out_dir` and return their paths.

    Other files in `out_dir` are left alone."""
    rendered = _render_all(models)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for file_name, text in rendered.items():
        path = out_dir / file_name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    """`python -m okra_runtime.crdgen --out DIR [--check] module:attr ...`."""
    parser = argparse.ArgumentParser(
        prog="python -m okra_runtime.crdgen",
        description="Generate CustomResourceDefinitions from pydantic models.",
    )
    parser.add_argument("--out", required=True, type=Path, help="directory of CRD YAML files")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if DIR is out of date"
    )
    parser.add_argument(
        "targets",
        nargs="+",
        metavar="module:attr",
        help="a model class, or a list/tuple of model classes",
    )
    args = parser.parse_args(argv)
    try:
        models = [m for target in args.targets for m in _load_target(target)]
    except (ImportError, AttributeError, ValueError) as err:
        print(f"crdgen: {err}", file=sys.stderr)
        return 2
    out_dir: Path = args.out
    try:
        if not args.check:
            for path in write_crds(models, out_dir):
                print(path)
            return 0
        rendered = _render_all(models)
    except CRDGenerationError as err:
        print(f"crdgen: {err}", file=sys.stderr)
        return 1
    return check_generated(
        rendered,
        out_dir,
        "crdgen: CRDs are out of date with their models",
        "run `make manifests` to regenerate them.",
    )


def check_generated(rendered: Mapping[str, str], out_dir: Path, stale: str, fix: str) -> int:
    """A generator's `--check`: 0 when each file of `rendered` (name -> text) stands in
    `out_dir` as rendered; else 1, with `stale`, each missing or differing file and `fix`
    on stderr."""
    problems = []
    for file_name, text in rendered.items():
        path = out_dir / file_name
        if not path.is_file():
            problems.append(f"  missing: {path}")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"  differs: {path}")
    if problems:
        print(f"{stale}:\n" + "\n".join(problems) + f"\n{fix}", file=sys.stderr)
        return 1
    return 0


# -- rendering --------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Safe YAML with block scalars for multi-line text and no anchors/aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def _render(model: type[BaseModel]) -> str:
    body = yaml.dump(
        crd_for(model),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=80,  # where text may wrap; a line ends at the first space past it
    )
    source = f"{model.__module__}:{model.__qualname__}"
    return (
        f"# Generated from {source} by `python -m okra_runtime.crdgen`. DO NOT EDIT.\n---\n{body}"
    )


def _render_all(models: Iterable[type[BaseModel]]) -> dict[str, str]:
    rendered: dict[str, str] = {}
    owners: dict[str, str] = {}
    for model in models:
        info = crd_info(model)
        file_name = f"{info.group}_{info.plural}.yaml"
        if file_name in owners:
            raise CRDGenerationError(
                f"{model.__qualname__} and {owners[file_name]} both declare {info.name}; "
                "one model per CRD (a CRD here has a single version)"
            )
        owners[file_name] = model.__qualname__
        rendered[file_name] = _render(model)
    return rendered


def _load_target(target: str) -> list[type[BaseModel]]:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{target!r}: expected module:attr, e.g. mypkg.api:Widget")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    items = list(obj) if isinstance(obj, list | tuple) else [obj]
    for item in items:
        if not (isinstance(item, type) and issubclass(item, BaseModel)):
            raise ValueError(f"{target!r}: {item!r} is not a pydantic model class")
    return items


def _column(column: PrinterColumn) -> dict[str, Any]:
    out: dict[str, Any] = {"name": column.name, "type": column.type}
    if column.format:
        out["format"] = column.format
    if column.description:
        out["description"] = column.description
    if column.priority:
        out["priority"] = column.priority
    out["jsonPath"] = column.json_path
    return out


# -- pydantic JSON schema -> structural schema ------------------------------------------------

_OBJECT_KEYS = ("apiVersion", "kind", "metadata")
_OBJECT_PROPERTIES: dict[str, Any] = {
    "apiVersion": {
        "description": "APIVersion defines the versioned schema of this representation of an "
        "object. Servers should convert recognized schemas to the latest internal value, and "
        "may reject unrecognized values. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
        "#resources",
        "type": "string",
    },
    "kind": {
        "description": "Kind is a string value representing the REST resource this object "
        "represents. Servers may infer this from the endpoint the client submits requests to. "
        "Cannot be updated. In CamelCase. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
        "#types-kinds",
        "type": "string",
    },
    "metadata": {"type": "object"},
}

_VALIDATIONS = "x-kubernetes-validations"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
# Keywords of apiextensions.k8s.io/v1 JSONSchemaProps allowed in a structural schema, in the
# order they are written out.
_KEY_ORDER = (
    "description",
    "type",
    "format",
    "enum",
    "default",
    "nullable",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "items",
    "properties",
    "required",
    "additionalProperties",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "example",
    "externalDocs",
    _INT_OR_STRING,
    _PRESERVE,
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    _VALIDATIONS,
)
_ALLOWED = frozenset(_KEY_ORDER)
_RULE_ORDER = ("rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf")
# JSON Schema annotations pydantic writes that a CRD has no use for.
_DROPPED = frozenset({"title", "deprecated", "readOnly", "writeOnly", "$comment"})
# Keys that only annotate a node; a node with nothing else accepts any value.
_ANNOTATIONS = frozenset(
    {"description", "default", "example", "examples", "externalDocs", "nullable", _VALIDATIONS}
)
# Formats the API server validates the way pydantic serialises them.
_FORMATS = frozenset(
    {"date-time", "date", "uuid", "uuid3", "uuid4", "uuid5", "email", "uri", "hostname"}
    | {"ipv4", "ipv6", "cidr", "mac", "byte", "password"}
)
_SCALARS = frozenset({"string", "integer", "number", "boolean"})
_NUMBER_KEYS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_STRING_KEYS = frozenset({"minLength", "maxLength", "pattern", "format"})
_JSON_TYPES: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


class _SchemaGenerator(GenerateJsonSchema):
    """pydantic's generator, plus attribute docstrings as field descriptions."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        props = json_schema.get("properties")
        cls = schema["cls"]
        if not (isinstance(props, dict) and issubclass(cls, BaseModel)):
            return json_schema
        docs = _attribute_docstrings(cls)
        for name, field in cls.model_fields.items():
            prop = props.get(_json_name(name, field))
            if field.description is None and name in docs and isinstance(prop, dict):
                prop.setdefault("description", docs[name])
        return json_schema


def _json_name(name: str, field: FieldInfo) -> str:
    """The property name pydantic writes for a field in validation mode, by alias."""
    alias = field.validation_alias
    first: object = alias.choices[0] if isinstance(alias, AliasChoices) else alias
    if isinstance(first, AliasPath) and len(first.path) == 1:
        first = first.path[0]
    if isinstance(first, str):
        return first
    return field.alias or name


def _attribute_docstrings(cls: type[BaseModel]) -> dict[str, str]:
    """Docstrings written right below field declarations, base classes first."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not (issubclass(klass, BaseModel) and klass is not BaseModel):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue  # no source (defined dynamically): no attribute docstrings
        class_def = tree.body[0] if tree.body else None
        if not isinstance(class_def, ast.ClassDef):
            continue
        body = class_def.body
        for stmt, following in itertools.pairwise(body):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _without(node: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in keys}


def _merge(inner: Mapping[str, Any], outer: Mapping[str, Any]) -> dict[str, Any]:
    """`outer` (the field) overrides `inner` (its type); validation rules of both apply."""
    merged = dict(inner)
    for key, value in outer.items():
        if key == _VALIDATIONS and key in merged:
            merged[key] = [*merged[key], *value]
        else:
            merged[key] = value
    return merged


def _unshared(value: Any) -> Any:
    """A copy sharing no dict or list, also within itself (deepcopy keeps inner sharing): an
    inlined definition used twice must be two trees, or YAML writes anchors and aliases."""
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshared(v) for v in value]
    return value


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _first(node: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """`node` with the keys in `order` first, in that order; then the others as they were."""
    rank = {key: i for i, key in enumerate(order)}
    return dict(sorted(node.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    return _first(node, _KEY_ORDER)


class _Converter:
    """Turns pydantic's JSON Schema (draft 2020-12) into a Kubernetes structural schema."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs

    def convert(self, node: Mapping[str, Any], path: str, stack: frozenset[str]) -> dict[str, Any]:
        node = {k: v for k, v in node.items() if k not in _DROPPED}
        if "$ref" in node:
            name = _ref_name(node["$ref"])
            if name in stack:
                raise CRDGenerationError(
                    f"{path}: model {name} contains itself; CRD schemas cannot be recursive "
                    "(replace the cycle with a bounded depth or a reference by name)"
                )
            merged = _merge(self.defs[name], _without(node, "$ref"))
            return self.convert(merged, path, stack | {name})
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.convert(_merge(node["allOf"][0], _without(node, "allOf")), path, stack)
        for keyword in ("anyOf", "oneOf"):
            if keyword in node:
                return self._union(node[keyword], _without(node, keyword), path, stack)
        return self._typed(node, path, stack)

    def _union(
        self,
        branches: Sequence[Mapping[str, Any]],
        rest: dict[str, Any],
        path: str,
        stack: frozenset[str],
    ) -> dict[str, Any]:
        options = [b for b in branches if b.get("type") != "null"]  # X | None is just X
        if len(options) == 1:
            return self.convert(_merge(options[0], rest), path, stack)
        converted = [self.convert(b, path, stack) for b in options]
        types = sorted(str(c.get("type", "any")) for c in converted)
        if "object" in types:
            models = [_ref_name(b["$ref"]) for b in options if "$ref" in b]
            raise CRDGenerationError(
                f"{path}: a union of object types ({' | '.join(models) or types}) cannot be "
                "expressed in a Kubernetes structural schema. Use one model with optional "
                "fields and a CEL rule on it, e.g. model_config = ConfigDict(json_schema_extra="
                '{"x-kubernetes-validations": [{"rule": "has(self.a) != has(self.b)", '
                '"message": "exactly one of a or b must be set"}]})'
            )
        if types == ["integer", "string"]:
            hoisted: dict[str, Any] = {}
            for c in converted:
                allowed = _NUMBER_KEYS if c["type"] == "integer" else _STRING_KEYS
                for key, value in _without(c, "type").items():
                    if key not in allowed or key in hoisted:
                        raise CRDGenerationError(
                            f"{path}: in int | str, {key!r} on the {c['type']} side cannot be "
                            "kept; put it on the field or in a CEL rule"
                        )
                    hoisted[key] = value
            # No anyOf of the two types (controller-gen writes one): the flag alone makes the
            # server check the type, and its error then names the field once, not three times.
            return self.convert({**hoisted, **rest, _INT_OR_STRING: True}, path, stack)
        if set(types) <= {"integer", "number"} and all(len(c) == 1 for c in converted):
            return self.convert({**rest, "type": "number"}, path, stack)
        raise CRDGenerationError(
            f"{path}: the union {' | '.join(types)} cannot be expressed in a Kubernetes "
            "structural schema; use one type, int | str, or Any with a CEL rule"
        )

    def _typed(self, node: dict[str, Any], path: str, stack: frozenset[str]) -> dict[str, Any]:
        if "const" in node:
            node["enum"] = [node.pop("const")]
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"]
            if len(kinds) != 1:
                raise CRDGenerationError(f"{path}: a value of types {kind} has no single type")
            node["type"] = kind = kinds[0]
        if "enum" in node:
            node["enum"] = values = [v for v in node["enum"] if v is not None]
            if not values:
                raise CRDGenerationError(f"{path}: an enum of only None has no type")
            if kind is None:
                node["type"] = kind = self._enum_type(values, path)
        if kind == "null":
            raise CRDGenerationError(f"{path}: a field that can only be None has no type")
        if (
            kind is None
            and not node.get(_INT_OR_STRING)
            and set(node) <= _ANNOTATIONS | {_PRESERVE}
        ):
            node[_PRESERVE] = True  # Any / JsonValue: any JSON value is kept as it is
        out: dict[str, Any] = {}
        if kind == "object":
            self._object(node, out, path, stack)
        elif kind == "array":
            self._array(node, out, path, stack)
        for key, value in node.items():
            self._keyword(key, value, node, out, path)
        if "type" not in out and not out.get(_INT_OR_STRING) and not out.get(_PRESERVE):
            raise CRDGenerationError(f"{path}: a structural schema needs a type here: {node}")
        return _ordered(out)

    @staticmethod
    def _enum_type(values: list[Any], path: str) -> str:
        types = {_JSON_TYPES.get(type(v), "?") for v in values}
        if types == {"integer", "number"}:
            return "number"
        if len(types) != 1 or "?" in types:
            raise CRDGenerationError(f"{path}: enum {values} mixes value types; use one type")
        return types.pop()

    def _object(
        self, node: dict[str, Any], out: dict[str, Any], path: str, stack: frozenset[str]
    ) -> None:
        for keyword in ("patternProperties", "propertyNames"):
            if keyword in node:
                raise CRDGenerationError(
                    f"{path}: constrained map keys ({keyword}) are not supported; use "
                    "dict[str, X] and a CEL rule such as self.all(k, k.matches('...'))"
                )
        props = node.pop("properties", None)
        extra = node.pop("additionalProperties", None)
        if props is not None:
            if props:
                out["properties"] = {
                    key: self.convert(value, f"{path}.{key}", stack) for key, value in props.items()
                }
                required = [k for k in node.pop("required", []) if k in props]
                if required:
                    out["required"] = required
            if extra is True or extra == {}:
                out[_PRESERVE] = True  # extra="allow": unknown fields are kept
            elif isinstance(extra, dict):
                raise CRDGenerationError(
                    f"{path}: typed extra fields next to declared ones cannot be expressed; "
                    "declare a dict[str, X] field instead"
                )
            return
        node.pop("required", None)
        if extra is None or extra is True:
            out[_PRESERVE] = True  # dict / dict[str, Any]
        elif isinstance(extra, dict):
            value = self.convert(extra, f"{path}.*", stack)
            if value.get(_PRESERVE) and "type" not in value:
                out[_PRESERVE] = True
            else:
                out["additionalProperties"] = value

    def _array(
        self, node: dict[str, Any], out: dict[str, Any], path: str, stack: frozenset[str]
    ) -> None:
        if "prefixItems" in node:
            raise CRDGenerationError(
                f"{path}: a fixed-length tuple cannot be expressed; use list[X] or a model"
            )
        items = self.convert(node.pop("items", {}), f"{path}[]", stack)
        out["items"] = items
        if node.pop("uniqueItems", False):
            if items.get("type") not in _SCALARS:
                raise CRDGenerationError(
                    f"{path}: a set is only expressible for scalar items "
                    "(x-kubernetes-list-type: set); use a list"
                )
            out["x-kubernetes-list-type"] = "set"

    @staticmethod
    def _keyword(
        key: str, value: Any, node: Mapping[str, Any], out: dict[str, Any], path: str
    ) -> None:
        if key == "default":
            if value is not None:
                out["default"] = _drop_nulls(value)
        elif key == "examples":
            if value and "example" not in node:
                out["example"] = value[0]
        elif key == "format":
            if value in _FORMATS:
                out["format"] = value
        elif key == "description":
            if value:
                out["description"] = value
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if bound in node:
                raise CRDGenerationError(f"{path}: both {bound} and {key} are set; keep one")
            out[bound], out[key] = value, True
        elif key == _VALIDATIONS:
            # pydantic sorts keys alphabetically; the rule reads best first.
            out[key] = [_first(rule, _RULE_ORDER) for rule in value]
        elif key not in _ALLOWED:
            raise CRDGenerationError(
                f"{path}: {key!r} is not a keyword of a Kubernetes structural schema "
                "(check json_schema_extra)"
            )
        elif key not in out:
            out[key] = value


if __name__ == "__main__":
    # Run the imported module's main, so models that import CRDInfo from okra_runtime.crdgen
    # and this entry point share one CRDInfo class (not one from __main__).
    from okra_runtime.crdgen import main as _main

    raise SystemExit(_main())
