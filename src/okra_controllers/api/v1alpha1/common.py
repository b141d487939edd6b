"""Shared pieces of okra's API: the group, the base model, conditions."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from okra_runtime.crdgen import CRDInfo, PrinterColumn

GROUP = "okra.mumo.co"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
SYSTEM_LABEL = f"{GROUP}/system"
"""On everything a system Cell makes: the system Cell's name."""
APP_LABEL = f"{GROUP}/application"
"""On everything a system Cell makes for one application: the application's name."""
ARN_MAX_LENGTH = 2048
"""AWS's limit on the length of an ARN. A longer one is refused by the API server's schema, so
it is never signed and sent to AWS to be refused there."""
CELL_LABELS_ANNOTATION = f"{GROUP}/cell-labels"
"""On an Argo CD cluster Secret: the labels a Cell put there (comma-separated keys), which a
ClusterSet writing the same Secret keeps instead of removing."""


class ApiModel(BaseModel):
    """Base of every okra API type: camelCase field names (the YAML names are the API),
    unknown fields rejected with a message naming them."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def with_rules(*rules: tuple[str, str]) -> ConfigDict:
    """ApiModel's config with CEL rules (`x-kubernetes-validations`) for the API server: each
    a rule and the message it refuses an object with when the rule is false."""
    config = ApiModel.model_config.copy()
    config["json_schema_extra"] = {
        "x-kubernetes-validations": [{"rule": r, "message": m} for r, m in rules]
    }
    return config


class TemplateMetadata(ApiModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class ObjectMeta(BaseModel):
    """The part of metadata okra reads; everything else is kept as the server sent it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    generation: int | None = None
    resource_version: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class OkraObject(ApiModel):
    """Base of okra's kinds (the root models of its CRDs): `apiVersion` okra's group and
    version, and `metadata`. Each kind sets its `kind` and its `__crd__` (`okra_crd`)."""

    api_version: str = API_VERSION
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


def condition_column(condition: str) -> PrinterColumn:
    """A `kubectl get` column showing the status of the object's condition `condition`."""
    return PrinterColumn(
        condition, "string", f'.status.conditions[?(@.type=="{condition}")].status'
    )


def okra_crd(
    kind: str,
    plural: str,
    *printer_columns: PrinterColumn,
    scope: Literal["Namespaced", "Cluster"] = "Namespaced",
    short_names: tuple[str, ...] = (),
) -> CRDInfo:
    """What the CRD of one of okra's kinds says besides its schema: okra's group and version,
    the `okra` category (`kubectl get okra`), and the kind's names and columns."""
    return CRDInfo(
        group=GROUP,
        version=VERSION,
        kind=kind,
        plural=plural,
        scope=scope,
        short_names=short_names,
        categories=("okra",),
        printer_columns=printer_columns,
    )


class Condition(ApiModel):
    """A metav1.Condition."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", max_length=1024)
    message: str = Field(default="", max_length=32768)
    last_transition_time: datetime.datetime
    observed_generation: int | None = None


def with_condition(
    conditions: Sequence[Condition] | None,
    type_: str,
    ok: bool,
    reason: str,
    message: str,
    now: datetime.datetime,
    generation: int | None,
) -> list[Condition]:
    """`conditions` with condition `type_` set to `ok` (in its place, or added last). Its
    transition time moves only when its status does, as Kubernetes' API conventions say: a
    pass that changes only the reason or the message keeps it."""
    value: Literal["True", "False"] = "True" if ok else "False"
    old = next((c for c in conditions or () if c.type == type_), None)
    kept = old is not None and old.status == value
    new = Condition(
        type=type_,
        status=value,
        reason=reason,
        message=message,
        last_transition_time=old.last_transition_time if old is not None and kept else now,
        observed_generation=generation,
    )
    if old is None:
        return [*(conditions or ()), new]
    return [new if c is old else c for c in conditions or ()]


class PendingNotification(ApiModel):
    """A notification recorded in an object's status (its outbox) in the same write as the
    change it reports, removed once the receiver accepted it: a manager that restarts
    sends what is still here, so every notification is delivered at least once."""

    key: str = Field(min_length=1, max_length=64)
    """Unique per notification and the same on every attempt (`Idempotency-Key` header,
    `id` field): a receiver drops the duplicates at-least-once delivery may cause."""
    trigger: str
    service: str
    recipient: str = ""
    payload: str
    """The notification's fields as a JSON object, rendered into the service's body."""
    created: datetime.datetime
