"""A CRD generated from pydantic models is accepted by a real kube-apiserver as a structural
schema, and the server enforces and defaults what the models say."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from okra_runtime.crdgen import CRDInfo, PrinterColumn, write_crds
from okra_testkit.envtest import ControlPlane

GROUP, VERSION, PLURAL = "crdgen.example.dev", "v1alpha1", "gadgets"
CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Tier(StrEnum):
    """How much capacity a gadget gets."""

    BRONZE = "bronze"
    SILVER = "silver"


class Backend(BaseModel):
    """Where traffic goes: a Service or an external URL, exactly one."""

    model_config = ConfigDict(
        **CAMEL,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.serviceName) != has(self.url)",
                    "message": "set exactly one of serviceName or url",
                }
            ]
        },
    )
    service_name: Annotated[str, Field(max_length=63)] | None = None
    url: Annotated[str, Field(max_length=2048)] | None = None
    port: int = Field(default=80, ge=1, le=65535)
    weight: int = Field(default=1, ge=0)


class Window(BaseModel):
    model_config = CAMEL
    start_hour: int = Field(default=0, ge=0, le=23)
    end_hour: int = Field(default=24, gt=0, le=24)


class GadgetSpec(BaseModel):
    model_config = CAMEL
    replicas: int = Field(default=1, ge=1, le=10)
    tier: Tier = Tier.BRONZE
    max_surge: Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]+%$")] = "25%"
    backends: list[Backend] = Field(default_factory=list, max_length=8)
    labels: dict[str, Annotated[str, Field(max_length=63)]] = Field(
        default_factory=dict,
        max_length=16,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(k, !k.startsWith('kubernetes.io/'))",
                    "message": "labels must not use the kubernetes.io/ prefix",
                }
            ]
        },
    )
    settings: dict[str, Any] = Field(default_factory=dict)
    zones: set[Annotated[str, Field(max_length=32)]] = Field(default_factory=set, max_length=4)
    paused_until: datetime | None = None
    window: Window = Window()


class Condition(BaseModel):
    model_config = CAMEL
    type: str
    status: Literal["True", "False", "Unknown"]
    last_transition_time: datetime
    reason: str = ""
    message: str = ""


class GadgetStatus(BaseModel):
    model_config = CAMEL
    observed_generation: int = 0
    conditions: list[Condition] = Field(default_factory=list, max_length=16)


class Gadget(BaseModel):
    """A gadget, to prove generated schemas on a real API server."""

    model_config = CAMEL
    __crd__: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        version=VERSION,
        kind="Gadget",
        plural=PLURAL,
        short_names=("gdg",),
        printer_columns=(PrinterColumn("Replicas", "integer", ".spec.replicas"),),
    )
    spec: GadgetSpec
    status: GadgetStatus | None = None


@pytest.fixture(scope="module")
def gadget_crd(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> str:
    [path] = write_crds([Gadget], tmp_path_factory.mktemp("crds"))
    assert control_plane.install_crds([path]) == [f"{PLURAL}.{GROUP}"]  # waits for Established
    return f"{PLURAL}.{GROUP}"


def gadget(name: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
        **extra,
    }


async def test_crd_is_established_with_a_structural_schema(
    control_plane: ControlPlane, kube: client.ApiClient, gadget_crd: str, tmp_path: Path
) -> None:
    crd = await client.ApiextensionsV1Api(kube).read_custom_resource_definition(gadget_crd)
    conditions = {c.type: c.status for c in crd.status.conditions}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert "NonStructuralSchema" not in conditions
    assert crd.spec.versions[0].subresources.status == {}
    # Nothing in the schema draws a warning (unknown field, ignored format, CEL cost).
    [path] = write_crds([Gadget], tmp_path)
    applied = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path))
    assert "arning" not in applied.stderr, applied.stderr


def error_message(err: ApiException) -> str:
    assert err.body is not None
    message: str = json.loads(err.body)["message"]
    return message


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(spec: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = spec
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(_set("tier", "gold"), ['spec.tier: Unsupported value: "gold"'], id="enum"),
        pytest.param(
            _set("replicas", 0), ["spec.replicas", "greater than or equal to 1"], id="min"
        ),
        pytest.param(
            _set("window", {"endHour": 0}),
            ["spec.window.endHour", "greater than 0"],
            id="exclusive",
        ),
        pytest.param(
            _set("backends.0.url", "https://example.com"),
            ["spec.backends[0]", "set exactly one of serviceName or url"],
            id="model-cel-rule",
        ),
        pytest.param(
            _set("labels", {"kubernetes.io/name": "x"}),
            ["spec.labels", "labels must not use the kubernetes.io/ prefix"],
            id="field-cel-rule",
        ),
        pytest.param(
            _set("maxSurge", True),
            ["spec.maxSurge", "must be of type integer,string"],
            id="int-or-string-type",
        ),
        pytest.param(
            _set("maxSurge", -1), ["spec.maxSurge", "greater than or equal to 0"], id="int-side"
        ),
        pytest.param(_set("maxSurge", "lots"), ["spec.maxSurge", "should match"], id="str-side"),
        pytest.param(_set("zones", ["a", "a"]), ["spec.zones[1]", "Duplicate value"], id="set"),
    ],
)
async def test_invalid_object_is_rejected_naming_the_field(
    kube: client.ApiClient,
    namespace: str,
    gadget_crd: str,
    mutate: Callable[[dict[str, Any]], None],
    expected: list[str],
) -> None:
    spec: dict[str, Any] = {"backends": [{"serviceName": "web"}]}
    mutate(spec)
    with pytest.raises(ApiException) as err:
        await client.CustomObjectsApi(kube).create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, gadget("bad", spec)
        )
    assert err.value.status == 422
    message = error_message(err.value)
    for text in expected:
        assert text in message


async def test_valid_object_round_trips_with_server_defaults(
    kube: client.ApiClient, namespace: str, gadget_crd: str
) -> None:
    objs = client.CustomObjectsApi(kube)
    created = await objs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, gadget("minimal", {"backends": [{"url": "https://x"}]})
    )
    assert created["spec"] == {  # default_factory values are Python-side: not applied here
        "replicas": 1,
        "tier": "bronze",
        "maxSurge": "25%",
        "backends": [{"url": "https://x", "port": 80, "weight": 1}],
        "window": {"startHour": 0, "endHour": 24},
    }

    # What a Python client sends: every field, unset optional ones as null.
    model = Gadget(
        spec=GadgetSpec(
            replicas=3,
            tier=Tier.SILVER,
            max_surge=2,
            backends=[Backend(service_name="web", port=8080)],
            labels={"app": "web"},
            settings={"nested": {"free": ["form", 1]}},
            zones={"a"},
            window=Window(start_hour=2, end_hour=5),
        )
    )
    body = {**gadget("full", {}), **model.model_dump(by_alias=True, mode="json")}
    assert body["spec"]["pausedUntil"] is None
    stored = await objs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert "pausedUntil" not in stored["spec"]  # null for a non-nullable field is dropped
    assert "serviceName" in stored["spec"]["backends"][0]
    assert "url" not in stored["spec"]["backends"][0]  # so has(self.url) in CEL stays false
    assert Gadget.model_validate(stored) == model


async def test_status_is_written_through_the_status_subresource(
    kube: client.ApiClient, namespace: str, gadget_crd: str
) -> None:
    objs = client.CustomObjectsApi(kube)
    condition = Condition(
        type="Ready",
        status="True",
        last_transition_time=datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
        reason="Synced",
    )
    status = GadgetStatus(observed_generation=1, conditions=[condition])
    status_json = status.model_dump(by_alias=True, mode="json")
    created = await objs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, gadget("g", {}, status=status_json)
    )
    assert "status" not in created  # the main resource ignores status

    created["status"] = status_json
    updated = await objs.replace_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "g", created
    )
    assert GadgetStatus.model_validate(updated["status"]) == status
    assert updated["status"]["conditions"][0]["lastTransitionTime"] == "2024-05-01T12:30:00Z"

    updated["status"]["conditions"][0]["status"] = "Maybe"
    with pytest.raises(ApiException) as err:
        await objs.replace_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, "g", updated
        )
    assert err.value.status == 422
    assert "status.conditions[0].status" in error_message(err.value)
