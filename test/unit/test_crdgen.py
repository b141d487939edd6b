"""CRDs generated from pydantic models: each Python-to-schema mapping, the CRD around the
schema, the files and the CLI, and one realistic model against a golden CRD."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from enum import Enum, IntEnum, StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Optional

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

from okra_runtime.crdgen import (
    CRDGenerationError,
    CRDInfo,
    PrinterColumn,
    crd_for,
    crd_info,
    main,
    openapi_schema,
    write_crds,
)

CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True)


def root_of(spec: type[BaseModel], status: type[BaseModel] | None = None) -> type[BaseModel]:
    fields: dict[str, Any] = {"spec": (spec, ...)}
    if status is not None:
        fields["status"] = (Optional[status], None)  # noqa: UP045 - a runtime type expression
    return create_model("Thing", **fields)


def spec_of(spec: type[BaseModel]) -> dict[str, Any]:
    """The generated schema of `spec` used as the spec of a root model."""
    schema: dict[str, Any] = openapi_schema(root_of(spec))["properties"]["spec"]
    return schema


def prop(spec: type[BaseModel], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = spec_of(spec)["properties"][name]
    return schema


def walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema node under `node` (not the property-name maps themselves)."""
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key == "properties":
                for child in value.values():
                    yield from walk(child)
            elif key in ("items", "additionalProperties", "not"):
                yield from walk(value)
            elif key in ("anyOf", "allOf", "oneOf"):
                for child in value:
                    yield from walk(child)


# -- the root object --------------------------------------------------------------------------


class Empty(BaseModel):
    pass


def test_root_gets_apiversion_kind_metadata_and_the_models_fields_in_order() -> None:
    class Status(BaseModel):
        ready: bool = False

    class Thing(BaseModel):
        """A thing: the root docstring describes the resource."""

        spec: Empty
        status: Status | None = None

    schema = openapi_schema(Thing)
    assert schema["description"] == "A thing: the root docstring describes the resource."
    assert schema["type"] == "object"
    assert list(schema["properties"]) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["properties"]["kind"]["type"] == "string"
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["required"] == ["spec"]


def test_declared_apiversion_kind_metadata_are_replaced() -> None:
    class Meta(BaseModel):
        name: str
        labels: dict[str, str] = {}

    class Thing(BaseModel):
        model_config = CAMEL
        api_version: Literal["x.example.com/v1"]
        kind: Literal["Thing"]
        metadata: Meta
        spec: Empty

    schema = openapi_schema(Thing)
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert "enum" not in schema["properties"]["kind"]
    assert "enum" not in schema["properties"]["apiVersion"]
    assert schema["required"] == ["spec"]


def test_status_is_never_required() -> None:
    class Status(BaseModel):
        ready: bool

    class Thing(BaseModel):
        spec: Empty
        status: Status  # required in Python, but the API server drops status on create

    schema = openapi_schema(Thing)
    assert schema["required"] == ["spec"]
    assert schema["properties"]["status"]["required"] == ["ready"]


def test_root_without_spec_model_is_an_error() -> None:
    class NoSpec(BaseModel):
        status: Empty

    class ScalarSpec(BaseModel):
        spec: int

    with pytest.raises(CRDGenerationError, match="NoSpec: the root model needs a `spec` field"):
        openapi_schema(NoSpec)
    with pytest.raises(CRDGenerationError, match=r"ScalarSpec\.spec must be a model"):
        openapi_schema(ScalarSpec)


def test_schema_has_no_refs_defs_or_titles_anywhere() -> None:
    class Leaf(BaseModel):
        """A leaf."""

        title: str  # a *property* called title is fine

    class Spec(BaseModel):
        a: Leaf
        b: list[Leaf] = []
        c: dict[str, Leaf] = {}
        d: Leaf | None = None

    schema = openapi_schema(root_of(Spec))
    keys = {key for node in walk(schema) for key in node}
    assert not keys & {"$ref", "$defs", "definitions", "title", "allOf", "anyOf"}
    assert schema["properties"]["spec"]["properties"]["a"]["properties"]["title"] == {
        "type": "string"
    }
    assert schema["properties"]["spec"]["properties"]["c"]["additionalProperties"]["type"] == (
        "object"
    )


def test_inlined_models_share_no_objects() -> None:
    class Leaf(BaseModel):
        model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [{"rule": "1"}]})
        x: int = 0

    class Spec(BaseModel):
        a: Leaf
        b: Leaf

    spec = spec_of(Spec)
    spec["properties"]["a"]["x-kubernetes-validations"].append({"rule": "2"})
    assert spec["properties"]["b"]["x-kubernetes-validations"] == [{"rule": "1"}]
    rendered = yaml.safe_dump(spec)
    assert "&id" not in rendered
    assert "*id" not in rendered


def test_recursive_model_is_an_error_naming_the_field() -> None:
    class Node(BaseModel):
        children: list[Node] = []

    class Spec(BaseModel):
        tree: Node

    with pytest.raises(CRDGenerationError, match=r"Thing\.spec\.tree\.children\[\]: .*Node"):
        spec_of(Spec)


# -- names, required, optional ----------------------------------------------------------------


def test_field_names_are_the_camel_case_aliases() -> None:
    class Spec(BaseModel):
        model_config = CAMEL
        max_surge_percent: int
        explicit: int = Field(default=0, alias="somethingElse")

    assert list(spec_of(Spec)["properties"]) == ["maxSurgePercent", "somethingElse"]
    assert spec_of(Spec)["required"] == ["maxSurgePercent"]


def test_required_lists_fields_without_defaults_only() -> None:
    class Spec(BaseModel):
        a: int
        b: int = 1
        c: list[int] = Field(default_factory=list)
        d: int | None
        e: int | None = None

    assert spec_of(Spec)["required"] == ["a", "d"]


def test_model_with_only_defaults_has_no_required_key() -> None:
    class Spec(BaseModel):
        a: int = 1

    assert "required" not in spec_of(Spec)


def test_optional_collapses_to_its_type_and_is_not_nullable() -> None:
    class Leaf(BaseModel):
        x: int = 0

    class Spec(BaseModel):
        a: int | None = None
        b: Optional[str] = None  # noqa: UP045 - the spelling under test
        c: Leaf | None = None
        d: list[int] | None = None

    spec = spec_of(Spec)
    assert spec["properties"]["a"] == {"type": "integer"}
    assert spec["properties"]["b"] == {"type": "string"}
    assert spec["properties"]["c"]["type"] == "object"
    assert spec["properties"]["d"] == {"type": "array", "items": {"type": "integer"}}
    assert not any("nullable" in node for node in walk(spec))


def test_nullable_is_opt_in_through_json_schema_extra() -> None:
    class Spec(BaseModel):
        a: int | None = Field(default=None, json_schema_extra={"nullable": True})

    assert prop(Spec, "a") == {"type": "integer", "nullable": True}


def test_none_only_field_is_an_error() -> None:
    class Spec(BaseModel):
        nothing: None = None

    with pytest.raises(CRDGenerationError, match=r"spec\.nothing: .*only be None"):
        spec_of(Spec)


# -- scalars, enums, formats ------------------------------------------------------------------


def test_scalar_types() -> None:
    class Spec(BaseModel):
        s: str
        i: int
        f: float
        b: bool
        n: int | float

    props = spec_of(Spec)["properties"]
    assert props == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "n": {"type": "number"},
    }


class Color(StrEnum):
    """A colour a thing can have."""

    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


def test_literals_and_enums_become_enum() -> None:
    class Spec(BaseModel):
        one: Literal["only"] = "only"
        many: Literal["a", "b", "c"]
        numbers: Literal[1, 2, 3] = 2
        color: Color = Color.BLUE
        level: Level
        maybe: Literal["x", None] = None

    props = spec_of(Spec)["properties"]
    assert props["one"] == {"type": "string", "enum": ["only"], "default": "only"}
    assert props["many"] == {"type": "string", "enum": ["a", "b", "c"]}
    assert props["numbers"] == {"type": "integer", "enum": [1, 2, 3], "default": 2}
    assert props["color"] == {
        "description": "A colour a thing can have.",
        "type": "string",
        "enum": ["red", "blue"],
        "default": "blue",
    }
    assert props["level"]["type"] == "integer"
    assert props["level"]["enum"] == [1, 2]
    assert props["maybe"] == {"type": "string", "enum": ["x"]}


def test_enum_of_mixed_types_is_an_error() -> None:
    class Spec(BaseModel):
        mixed: Literal["a", 1]

    with pytest.raises(CRDGenerationError, match=r"spec\.mixed: enum .* mixes value types"):
        spec_of(Spec)


def test_dates_and_formats() -> None:
    class Spec(BaseModel):
        at: datetime
        on: date | None = None
        every: timedelta = timedelta(minutes=5)
        blob: bytes = b""

    props = spec_of(Spec)["properties"]
    assert props["at"] == {"type": "string", "format": "date-time"}
    assert props["on"] == {"type": "string", "format": "date"}
    # Kubernetes' "duration" is Go's 1h30m; pydantic writes ISO 8601 PT1H30M: no format.
    assert props["every"] == {"type": "string", "default": "PT5M"}
    assert props["blob"] == {"type": "string", "default": ""}


# -- constraints ------------------------------------------------------------------------------


def test_numeric_constraints() -> None:
    class Spec(BaseModel):
        ge_le: int = Field(ge=1, le=10)
        gt_lt: float = Field(gt=0, lt=1)
        step: int = Field(multiple_of=5)

    props = spec_of(Spec)["properties"]
    assert props["ge_le"] == {"type": "integer", "minimum": 1, "maximum": 10}
    # OpenAPI v3.0 (what a CRD speaks): exclusive bounds are booleans beside the bound.
    assert props["gt_lt"] == {
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 1,
        "exclusiveMaximum": True,
    }
    assert props["step"] == {"type": "integer", "multipleOf": 5}


def test_string_list_and_map_constraints() -> None:
    class Spec(BaseModel):
        name: str = Field(min_length=1, max_length=63, pattern=r"^[a-z]+$")
        items: list[Annotated[str, Field(max_length=8)]] = Field(min_length=1, max_length=3)
        tags: dict[str, str] = Field(default_factory=dict, max_length=4)

    props = spec_of(Spec)["properties"]
    assert props["name"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 63,
        "pattern": "^[a-z]+$",
    }
    assert props["items"] == {
        "type": "array",
        "minItems": 1,
        "maxItems": 3,
        "items": {"type": "string", "maxLength": 8},
    }
    assert props["tags"] == {
        "type": "object",
        "maxProperties": 4,
        "additionalProperties": {"type": "string"},
    }


# -- defaults ---------------------------------------------------------------------------------


def test_defaults_are_published_when_not_none_and_not_factories() -> None:
    class Window(BaseModel):
        model_config = CAMEL
        start_hour: int = 0
        note: str | None = None

    class Spec(BaseModel):
        model_config = CAMEL
        replicas: int = 3
        ratio: float = 0.5
        on: bool = False
        name: str = "x"
        none: int | None = None
        factory: list[int] = Field(default_factory=lambda: [1])
        empty: list[int] = []
        window: Window = Window(start_hour=2)

    props = spec_of(Spec)["properties"]
    assert props["replicas"]["default"] == 3
    assert props["ratio"]["default"] == 0.5
    assert props["on"]["default"] is False
    assert props["name"]["default"] == "x"
    assert "default" not in props["none"]
    assert "default" not in props["factory"]
    assert props["empty"]["default"] == []
    # By alias, and without the None of an unset optional field.
    assert props["window"]["default"] == {"startHour": 2}


# -- descriptions -----------------------------------------------------------------------------


def test_descriptions_come_from_field_attribute_docstring_or_type_docstring() -> None:
    class Leaf(BaseModel):
        """Leaf's own description."""

        x: int = 0

    class Spec(BaseModel):
        """Spec docstring.

        Second paragraph kept."""

        model_config = CAMEL
        described: int = Field(default=0, description="From Field.")
        documented: int = 0
        """From the attribute docstring."""
        both: int = Field(default=0, description="Field wins.")
        """Docstring loses."""
        leaf: Leaf
        leaf_described: Leaf = Field(description="The field's text wins over the model's.")
        leaf_documented: Leaf | None = None
        """Attribute docstring on an optional model."""
        bare: int = 0

    spec = spec_of(Spec)
    props = spec["properties"]
    assert spec["description"] == "Spec docstring.\n\nSecond paragraph kept."
    assert props["described"]["description"] == "From Field."
    assert props["documented"]["description"] == "From the attribute docstring."
    assert props["both"]["description"] == "Field wins."
    assert props["leaf"]["description"] == "Leaf's own description."
    assert props["leafDescribed"]["description"] == "The field's text wins over the model's."
    assert props["leafDocumented"]["description"] == "Attribute docstring on an optional model."
    assert "description" not in props["bare"]


def test_attribute_docstrings_are_inherited_from_base_models() -> None:
    class Base(BaseModel):
        a: int = 0
        """From the base."""

    class Spec(Base):
        b: int = 0
        """From the subclass."""

    props = spec_of(Spec)["properties"]
    assert props["a"]["description"] == "From the base."
    assert props["b"]["description"] == "From the subclass."


def test_model_without_source_still_generates() -> None:
    spec = create_model("Dynamic", a=(int, 1))
    assert prop(spec, "a") == {"type": "integer", "default": 1}


# -- maps, free-form values, int-or-string, sets ----------------------------------------------


def test_dict_of_values_is_object_with_additional_properties() -> None:
    class Leaf(BaseModel):
        x: int

    class Spec(BaseModel):
        labels: dict[str, str] = {}
        leaves: dict[str, Leaf] = {}
        lists: dict[str, list[int]] = {}

    props = spec_of(Spec)["properties"]
    assert props["labels"] == {
        "type": "object",
        "default": {},
        "additionalProperties": {"type": "string"},
    }
    assert props["leaves"]["additionalProperties"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
    }
    assert props["lists"]["additionalProperties"] == {
        "type": "array",
        "items": {"type": "integer"},
    }


def test_free_form_values_preserve_unknown_fields() -> None:
    class Spec(BaseModel):
        anything: Any = None
        json_value: JsonValue = None
        mapping: dict[str, Any] = Field(default_factory=dict)
        raw_dict: dict = Field(default_factory=dict)  # type: ignore[type-arg]
        json_map: dict[str, JsonValue] = Field(default_factory=dict)
        things: list[Any] = Field(default_factory=list)

    props = spec_of(Spec)["properties"]
    preserve = {"x-kubernetes-preserve-unknown-fields": True}
    assert props["anything"] == preserve
    assert props["json_value"] == preserve
    assert props["mapping"] == {"type": "object", **preserve}
    assert props["raw_dict"] == {"type": "object", **preserve}
    assert props["json_map"] == {"type": "object", **preserve}
    assert props["things"] == {"type": "array", "items": preserve}


def test_int_or_string() -> None:
    class Spec(BaseModel):
        model_config = CAMEL
        max_surge: int | str = "25%"
        port: int | str | None = None
        bounded: Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^\d+%$")] = 1

    props = spec_of(Spec)["properties"]
    assert props["maxSurge"] == {"default": "25%", "x-kubernetes-int-or-string": True}
    assert props["port"] == {"x-kubernetes-int-or-string": True}
    assert props["bounded"] == {
        "default": 1,
        "minimum": 0,
        "pattern": r"^\d+%$",
        "x-kubernetes-int-or-string": True,
    }


def test_set_of_scalars_is_a_set_list() -> None:
    class Leaf(BaseModel):
        x: int

    class Spec(BaseModel):
        zones: set[str] = set()
        frozen: frozenset[int] = frozenset()

    props = spec_of(Spec)["properties"]
    assert props["zones"] == {
        "type": "array",
        "default": [],
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
    }
    assert props["frozen"]["x-kubernetes-list-type"] == "set"


def test_extra_forbid_is_dropped_and_extra_allow_preserves_unknown_fields() -> None:
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a: int

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        a: int

    class Spec(BaseModel):
        strict: Strict
        open: Open

    props = spec_of(Spec)["properties"]
    assert props["strict"] == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }
    assert props["open"] == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "x-kubernetes-preserve-unknown-fields": True,
    }


# -- json_schema_extra: CEL rules and x-kubernetes-* keys -------------------------------------

ONE_OF: JsonDict = {"rule": "has(self.image) != has(self.chart)", "message": "set exactly one"}


def test_field_and_model_level_x_kubernetes_keys_pass_through() -> None:
    class Source(BaseModel):
        model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [ONE_OF]})
        image: str | None = None
        chart: str | None = None

    class Item(BaseModel):
        name: str

    class Spec(BaseModel):
        source: Source
        replicas: int = Field(
            default=1,
            json_schema_extra={"x-kubernetes-validations": [{"rule": "self % 2 == 1"}]},
        )
        items: list[Item] = Field(
            default_factory=list,
            json_schema_extra={
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
        )
        embedded: dict[str, Any] = Field(
            default_factory=dict, json_schema_extra={"x-kubernetes-embedded-resource": True}
        )

    props = spec_of(Spec)["properties"]
    assert props["source"]["x-kubernetes-validations"] == [ONE_OF]
    assert props["replicas"]["x-kubernetes-validations"] == [{"rule": "self % 2 == 1"}]
    assert props["items"]["x-kubernetes-list-type"] == "map"
    assert props["items"]["x-kubernetes-list-map-keys"] == ["name"]
    assert props["embedded"]["x-kubernetes-embedded-resource"] is True


def test_rules_of_a_field_and_of_its_model_both_apply() -> None:
    class Source(BaseModel):
        model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [ONE_OF]})
        image: str | None = None
        chart: str | None = None

    field_rule: JsonDict = {"rule": "!has(self.chart)", "message": "no charts here"}

    class Spec(BaseModel):
        source: Source | None = Field(
            default=None, json_schema_extra={"x-kubernetes-validations": [field_rule]}
        )

    assert prop(Spec, "source")["x-kubernetes-validations"] == [ONE_OF, field_rule]


def test_root_model_rules_pass_through() -> None:
    rule: JsonDict = {"rule": "self.metadata.name.size() <= 20", "message": "name too long"}

    class Thing(BaseModel):
        model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [rule]})
        spec: Empty

    assert openapi_schema(Thing)["x-kubernetes-validations"] == [rule]


def test_examples_become_example_and_annotations_kubernetes_lacks_are_dropped() -> None:
    class Spec(BaseModel):
        a: int = Field(default=0, examples=[3, 4], deprecated=True)

    assert prop(Spec, "a") == {"type": "integer", "default": 0, "example": 3}


def test_unknown_extra_key_is_an_error() -> None:
    class Spec(BaseModel):
        a: int = Field(default=0, json_schema_extra={"x-kubernetes-validation": []})

    with pytest.raises(CRDGenerationError, match=r"spec\.a: 'x-kubernetes-validation' is not"):
        spec_of(Spec)


# -- shapes a structural schema cannot say ----------------------------------------------------


def test_union_of_models_is_an_error_suggesting_a_cel_rule() -> None:
    class Image(BaseModel):
        image: str

    class Chart(BaseModel):
        chart: str

    class Spec(BaseModel):
        source: Image | Chart

    with pytest.raises(CRDGenerationError) as err:
        spec_of(Spec)
    message = str(err.value)
    assert "Thing.spec.source: a union of object types (Image | Chart)" in message
    assert "one model with optional fields and a CEL rule" in message
    assert "x-kubernetes-validations" in message


def test_discriminated_union_is_an_error() -> None:
    class A(BaseModel):
        kind: Literal["a"]

    class B(BaseModel):
        kind: Literal["b"]

    class Spec(BaseModel):
        source: A | B = Field(discriminator="kind")

    with pytest.raises(CRDGenerationError, match="a union of object types"):
        spec_of(Spec)


def test_model_or_scalar_union_is_an_error() -> None:
    class A(BaseModel):
        a: int

    class Spec(BaseModel):
        source: A | str

    with pytest.raises(CRDGenerationError, match="a union of object types"):
        spec_of(Spec)


def test_other_scalar_unions_are_errors() -> None:
    class Spec(BaseModel):
        flag: bool | str

    with pytest.raises(CRDGenerationError, match=r"spec\.flag: the union boolean \| string"):
        spec_of(Spec)


def test_tuple_is_an_error_and_set_of_objects_too() -> None:
    class Pair(BaseModel):
        pair: tuple[int, str]

    class Leaf(BaseModel, frozen=True):
        x: int

    class Objects(BaseModel):
        leaves: frozenset[Leaf]

    with pytest.raises(CRDGenerationError, match=r"spec\.pair: a fixed-length tuple"):
        spec_of(Pair)
    with pytest.raises(CRDGenerationError, match=r"spec\.leaves: a set is only expressible"):
        spec_of(Objects)


def test_variable_length_tuple_is_a_list() -> None:
    class Spec(BaseModel):
        values: tuple[int, ...] = ()

    assert prop(Spec, "values") == {"type": "array", "default": [], "items": {"type": "integer"}}


def test_constrained_map_keys_are_an_error() -> None:
    class Spec(BaseModel):
        by_color: dict[Color, int]

    with pytest.raises(CRDGenerationError, match=r"spec\.by_color: constrained map keys"):
        spec_of(Spec)


# -- CRDInfo and the CRD around the schema ----------------------------------------------------


def test_crd_info_reads_the_models_own_declaration() -> None:
    info = CRDInfo(group="x.example.com", version="v1", kind="Thing", plural="things")

    class Thing(BaseModel):
        __crd__: ClassVar[CRDInfo] = info
        spec: Empty

    class SubThing(Thing):
        pass

    assert crd_info(Thing) is info
    with pytest.raises(CRDGenerationError, match=r"SubThing declares no CRD: add `__crd__"):
        crd_info(SubThing)  # a subclass is another API: it must declare its own


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"group": "nodot"}, "group 'nodot' must be a lowercase domain with a dot"),
        ({"group": "X.example.com"}, "must be a lowercase domain"),
        ({"version": "1"}, "version '1' must look like v1"),
        ({"version": "V1"}, "version 'V1' must look like v1"),
        ({"kind": "thing"}, "kind 'thing' must be CamelCase"),
        ({"plural": "Things"}, "plural 'Things' must be lowercase"),
        ({"singular": "a-thing"}, "singular 'a-thing' must be lowercase"),
        ({"scope": "Global"}, "scope 'Global' must be Namespaced or Cluster"),
    ],
)
def test_crd_info_rejects_bad_names(changes: dict[str, Any], problem: str) -> None:
    args: dict[str, Any] = {
        "group": "x.example.com",
        "version": "v1",
        "kind": "Thing",
        "plural": "things",
        **changes,
    }
    with pytest.raises(CRDGenerationError) as err:
        CRDInfo(**args)
    assert problem in str(err.value)


def test_printer_column_rejects_bad_type_and_path() -> None:
    with pytest.raises(CRDGenerationError, match="type 'int' is not one of"):
        PrinterColumn("N", "int", ".spec.n")
    with pytest.raises(CRDGenerationError, match=r"must start with '\.'"):
        PrinterColumn("N", "integer", "spec.n")


def make_thing(**info: Any) -> type[BaseModel]:
    class Thing(BaseModel):
        __crd__: ClassVar[CRDInfo] = CRDInfo(
            **{"group": "x.example.com", "version": "v1", "kind": "Thing", "plural": "things"}
            | info
        )
        spec: Empty

    return Thing


def test_minimal_crd() -> None:
    crd = crd_for(make_thing())
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"] == {"name": "things.x.example.com"}
    assert crd["spec"]["group"] == "x.example.com"
    assert crd["spec"]["names"] == {
        "kind": "Thing",
        "listKind": "ThingList",
        "plural": "things",
        "singular": "thing",
    }
    assert crd["spec"]["scope"] == "Namespaced"
    [version] = crd["spec"]["versions"]
    assert list(version) == ["name", "served", "storage", "subresources", "schema"]
    assert version["name"] == "v1"
    assert version["served"] is True
    assert version["storage"] is True
    assert version["subresources"] == {"status": {}}
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"] == {"type": "object"}


def test_crd_names_scope_and_flags() -> None:
    crd = crd_for(
        make_thing(
            singular="onething",
            scope="Cluster",
            short_names=("th", "thg"),
            categories=("all", "example"),
            status_subresource=False,
            served=False,
            storage=False,
        )
    )
    names = crd["spec"]["names"]
    assert names["singular"] == "onething"
    assert names["shortNames"] == ["th", "thg"]
    assert names["categories"] == ["all", "example"]
    assert crd["spec"]["scope"] == "Cluster"
    [version] = crd["spec"]["versions"]
    assert "subresources" not in version
    assert version["served"] is False
    assert version["storage"] is False


def test_printer_columns_get_an_age_column_appended() -> None:
    crd = crd_for(
        make_thing(
            printer_columns=(
                PrinterColumn("Phase", "string", ".status.phase"),
                PrinterColumn(
                    "Ratio", "number", ".status.ratio", description="How much", priority=1
                ),
                PrinterColumn("Seen", "string", ".status.seen", format="date-time"),
            )
        )
    )
    assert crd["spec"]["versions"][0]["additionalPrinterColumns"] == [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {
            "name": "Ratio",
            "type": "number",
            "description": "How much",
            "priority": 1,
            "jsonPath": ".status.ratio",
        },
        {"name": "Seen", "type": "string", "format": "date-time", "jsonPath": ".status.seen"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def test_no_columns_means_no_column_list_and_age_is_not_duplicated() -> None:
    assert "additionalPrinterColumns" not in crd_for(make_thing())["spec"]["versions"][0]
    crd = crd_for(
        make_thing(
            printer_columns=(PrinterColumn("Created", "date", ".metadata.creationTimestamp"),)
        )
    )
    assert [c["name"] for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]] == [
        "Created"
    ]


# -- files ------------------------------------------------------------------------------------


def test_write_crds_names_files_like_kubebuilder_and_leaves_others(tmp_path: Path) -> None:
    other = tmp_path / "kustomization.yaml"
    other.write_text("resources: []\n")
    thing = make_thing()
    gadget = make_thing(kind="Gadget", plural="gadgets", group="y.example.com")
    out = tmp_path / "crd" / "bases"
    paths = write_crds([thing, gadget], out)
    assert paths == [out / "x.example.com_things.yaml", out / "y.example.com_gadgets.yaml"]
    assert other.read_text() == "resources: []\n"
    docs = list(yaml.safe_load_all(paths[0].read_text()))
    assert docs == [crd_for(thing)]
    first = paths[0].read_text()
    write_crds([thing], out)
    assert paths[0].read_text() == first  # deterministic


def test_write_crds_rejects_two_models_for_one_crd(tmp_path: Path) -> None:
    with pytest.raises(CRDGenerationError, match=r"both declare things\.x\.example\.com"):
        write_crds([make_thing(), make_thing()], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_multi_line_descriptions_are_block_scalars(tmp_path: Path) -> None:
    class Spec(BaseModel):
        """First line.

        More words."""

    class Thing(BaseModel):
        __crd__: ClassVar[CRDInfo] = CRDInfo(
            group="x.example.com", version="v1", kind="Thing", plural="things"
        )
        spec: Spec

    [path] = write_crds([Thing], tmp_path)
    text = path.read_text()
    assert "description: |-\n" in text
    assert "First line.\n\n" in text
    assert yaml.safe_load(text)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]["description"] == ("First line.\n\nMore words.")


# -- CLI --------------------------------------------------------------------------------------

MODELS_PY = """\
from typing import ClassVar
from pydantic import BaseModel
from okra_runtime.crdgen import CRDInfo

class Spec(BaseModel):
    size: int = 1

class Thing(BaseModel):
    __crd__: ClassVar[CRDInfo] = CRDInfo(
        group="x.example.com", version="v1", kind="Thing", plural="things")
    spec: Spec

class Gadget(BaseModel):
    __crd__: ClassVar[CRDInfo] = CRDInfo(
        group="x.example.com", version="v1", kind="Gadget", plural="gadgets")
    spec: Spec

ALL = (Thing, Gadget)
NOT_A_MODEL = 3
"""


@pytest.fixture
def models_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"crdgen_models_{uuid.uuid4().hex[:8]}"
    src = tmp_path / "src"
    src.mkdir()
    (src / f"{name}.py").write_text(MODELS_PY)
    monkeypatch.syspath_prepend(str(src))
    return name


def test_cli_writes_crds_for_a_model_and_a_tuple(models_module: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["--out", str(out), f"{models_module}:ALL"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "x.example.com_gadgets.yaml",
        "x.example.com_things.yaml",
    ]
    text = (out / "x.example.com_things.yaml").read_text()
    assert text.startswith(
        f"# Generated from {models_module}:Thing by `python -m okra_runtime.crdgen`. "
        "DO NOT EDIT.\n---\n"
    )


def test_cli_check_passes_when_up_to_date_and_lists_stale_files(
    models_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["--out", str(out), f"{models_module}:Thing", f"{models_module}:Gadget"]) == 0
    capsys.readouterr()
    assert main(["--check", "--out", str(out), f"{models_module}:ALL"]) == 0
    assert capsys.readouterr().err == ""

    things = out / "x.example.com_things.yaml"
    things.write_text(things.read_text().replace("size", "sise"))
    (out / "x.example.com_gadgets.yaml").unlink()
    before = things.read_text()
    assert main(["--check", "--out", str(out), f"{models_module}:ALL"]) == 1
    err = capsys.readouterr().err
    assert f"differs: {things}" in err
    assert f"missing: {out / 'x.example.com_gadgets.yaml'}" in err
    assert "run `make manifests`" in err
    assert things.read_text() == before  # --check writes nothing
    assert not (out / "x.example.com_gadgets.yaml").exists()


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("no_colon", "expected module:attr"),
        ("{mod}:NOT_A_MODEL", "3 is not a pydantic model class"),
        ("{mod}:Missing", "Missing"),
        ("no_such_module_xyz:Thing", "no_such_module_xyz"),
    ],
)
def test_cli_rejects_bad_targets(
    models_module: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    target: str,
    error: str,
) -> None:
    assert main(["--out", str(tmp_path), target.format(mod=models_module)]) == 2
    assert error in capsys.readouterr().err


def test_cli_reports_a_model_that_cannot_be_expressed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"crdgen_bad_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        MODELS_PY.replace("size: int = 1", "size: tuple[int, int] = (1, 2)")
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["--out", str(tmp_path / "out"), f"{name}:Thing"]) == 1
    assert "Thing.spec.size: a fixed-length tuple" in capsys.readouterr().err


def test_python_dash_m_entry_point(models_module: str, tmp_path: Path) -> None:
    # Under `python -m`, this file runs as __main__ while the models import CRDInfo from
    # okra_runtime.crdgen: the generator must still recognise their __crd__.
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "okra_runtime.crdgen", "--out", str(out), f"{models_module}:ALL"],
        cwd=tmp_path / "src",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "x.example.com_things.yaml").is_file()


# -- golden: a realistic resource -------------------------------------------------------------


class Protocol(StrEnum):
    """Wire protocol a port speaks."""

    HTTP = "HTTP"
    GRPC = "GRPC"


class Port(BaseModel):
    """A port a component listens on."""

    model_config = CAMEL
    name: str = Field(max_length=15, pattern=r"^[a-z][a-z0-9-]*$")
    port: int = Field(ge=1, le=65535)
    protocol: Protocol = Protocol.HTTP


class Component(BaseModel):
    """One part of a widget, run from an image or installed from a chart."""

    model_config = ConfigDict(
        **CAMEL,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.image) != has(self.chart)",
                    "message": "set exactly one of image or chart",
                }
            ]
        },
    )
    name: str = Field(max_length=63)
    image: str | None = None
    """Container image reference."""
    chart: str | None = None
    """Helm chart reference."""
    ports: list[Port] = Field(default_factory=list, max_length=8)


class WidgetSpec(BaseModel):
    """What the widget should be.

    Components are started in order."""

    model_config = CAMEL
    replicas: int = Field(default=1, ge=0, le=100, description="How many copies to run.")
    mode: Literal["Active", "Standby"] = "Active"
    components: list[Component] = Field(min_length=1, max_length=16)
    labels: dict[str, str] = Field(
        default_factory=dict, description="Labels copied onto every part."
    )
    max_unavailable: int | str = "25%"
    """Replicas that may be down during an update: a number or a percentage."""
    suspend: bool | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    """Free-form settings handed to the components."""


class WidgetCondition(BaseModel):
    """One aspect of the widget's state, as metav1.Condition says it."""

    model_config = CAMEL
    type: str = Field(max_length=316)
    status: Literal["True", "False", "Unknown"]
    observed_generation: int | None = Field(default=None, ge=0)
    last_transition_time: datetime
    reason: str = Field(default="", max_length=1024)
    message: str = Field(default="", max_length=32768)


class WidgetPhase(Enum):
    PENDING = "Pending"
    READY = "Ready"
    FAILED = "Failed"


class WidgetStatus(BaseModel):
    model_config = CAMEL
    observed_generation: int = 0
    phase: WidgetPhase | None = None
    conditions: list[WidgetCondition] = Field(
        default_factory=list,
        max_length=8,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class Widget(BaseModel):
    """Widget is a small deployable thing."""

    model_config = CAMEL
    __crd__: ClassVar[CRDInfo] = CRDInfo(
        group="example.com",
        version="v1alpha1",
        kind="Widget",
        plural="widgets",
        short_names=("wd",),
        categories=("all",),
        printer_columns=(
            PrinterColumn("Replicas", "integer", ".spec.replicas"),
            PrinterColumn("Phase", "string", ".status.phase"),
            PrinterColumn("Mode", "string", ".spec.mode", priority=1),
        ),
    )
    spec: WidgetSpec
    status: WidgetStatus | None = None


WIDGET_CRD = textwrap.dedent("""\
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.com
    spec:
      group: example.com
      names:
        kind: Widget
        listKind: WidgetList
        plural: widgets
        singular: widget
        shortNames:
        - wd
        categories:
        - all
      scope: Namespaced
      versions:
      - name: v1alpha1
        served: true
        storage: true
        subresources:
          status: {}
        additionalPrinterColumns:
        - name: Replicas
          type: integer
          jsonPath: .spec.replicas
        - name: Phase
          type: string
          jsonPath: .status.phase
        - name: Mode
          type: string
          priority: 1
          jsonPath: .spec.mode
        - name: Age
          type: date
          jsonPath: .metadata.creationTimestamp
        schema:
          openAPIV3Schema:
            description: Widget is a small deployable thing.
            type: object
            properties:
              apiVersion:
                description: 'APIVersion defines the versioned schema of this representation
                  of an object. Servers should convert recognized schemas to the latest
                  internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources'
                type: string
              kind:
                description: 'Kind is a string value representing the REST resource this
                  object represents. Servers may infer this from the endpoint the client
                  submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds'
                type: string
              metadata:
                type: object
              spec:
                description: |-
                  What the widget should be.

                  Components are started in order.
                type: object
                properties:
                  replicas:
                    description: How many copies to run.
                    type: integer
                    default: 1
                    minimum: 0
                    maximum: 100
                  mode:
                    type: string
                    enum:
                    - Active
                    - Standby
                    default: Active
                  components:
                    type: array
                    minItems: 1
                    maxItems: 16
                    items:
                      description: One part of a widget, run from an image or installed
                        from a chart.
                      type: object
                      properties:
                        name:
                          type: string
                          maxLength: 63
                        image:
                          description: Container image reference.
                          type: string
                        chart:
                          description: Helm chart reference.
                          type: string
                        ports:
                          type: array
                          maxItems: 8
                          items:
                            description: A port a component listens on.
                            type: object
                            properties:
                              name:
                                type: string
                                maxLength: 15
                                pattern: ^[a-z][a-z0-9-]*$
                              port:
                                type: integer
                                minimum: 1
                                maximum: 65535
                              protocol:
                                description: Wire protocol a port speaks.
                                type: string
                                enum:
                                - HTTP
                                - GRPC
                                default: HTTP
                            required:
                            - name
                            - port
                      required:
                      - name
                      x-kubernetes-validations:
                      - rule: has(self.image) != has(self.chart)
                        message: set exactly one of image or chart
                  labels:
                    description: Labels copied onto every part.
                    type: object
                    additionalProperties:
                      type: string
                  maxUnavailable:
                    description: 'Replicas that may be down during an update: a number
                      or a percentage.'
                    default: 25%
                    x-kubernetes-int-or-string: true
                  suspend:
                    type: boolean
                  settings:
                    description: Free-form settings handed to the components.
                    type: object
                    x-kubernetes-preserve-unknown-fields: true
                required:
                - components
              status:
                type: object
                properties:
                  observedGeneration:
                    type: integer
                    default: 0
                  phase:
                    type: string
                    enum:
                    - Pending
                    - Ready
                    - Failed
                  conditions:
                    type: array
                    maxItems: 8
                    items:
                      description: One aspect of the widget's state, as metav1.Condition
                        says it.
                      type: object
                      properties:
                        type:
                          type: string
                          maxLength: 316
                        status:
                          type: string
                          enum:
                          - 'True'
                          - 'False'
                          - Unknown
                        observedGeneration:
                          type: integer
                          minimum: 0
                        lastTransitionTime:
                          type: string
                          format: date-time
                        reason:
                          type: string
                          default: ''
                          maxLength: 1024
                        message:
                          type: string
                          default: ''
                          maxLength: 32768
                      required:
                      - type
                      - status
                      - lastTransitionTime
                    x-kubernetes-list-type: map
                    x-kubernetes-list-map-keys:
                    - type
            required:
            - spec
    """)


def test_golden_widget_crd(tmp_path: Path) -> None:
    [path] = write_crds([Widget], tmp_path)
    assert path.name == "example.com_widgets.yaml"
    header, body = path.read_text().split("\n", 1)
    assert header == (
        f"# Generated from {Widget.__module__}:Widget by `python -m okra_runtime.crdgen`. "
        "DO NOT EDIT."
    )
    assert body == WIDGET_CRD
    assert yaml.safe_load(body) == crd_for(Widget)
