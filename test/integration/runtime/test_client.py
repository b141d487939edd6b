"""okra_runtime.Client against the real API server: every verb, typed errors,
discovery of CRDs installed after start, and pagination."""

from __future__ import annotations

from pathlib import Path

import pytest

from okra_runtime.client import Client
from okra_runtime.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    NoKindMatchError,
    NotFoundError,
)
from okra_runtime.gvk import GVK
from okra_testkit.envtest import ControlPlane

CM = GVK("", "v1", "ConfigMap")


def cm(name: str, ns: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "t"}},
        "data": data,
    }


async def test_crud_and_typed_errors(rt_client: Client, namespace: str) -> None:
    created = await rt_client.create(cm("a", namespace, k="1"))
    assert created["data"] == {"k": "1"}
    with pytest.raises(AlreadyExistsError) as exists:
        await rt_client.create(cm("a", namespace))
    assert 'configmaps "a" already exists' in exists.value.message

    got = await rt_client.get(CM, "a", namespace)
    got["data"]["k"] = "2"
    updated = await rt_client.update(got)
    assert updated["data"] == {"k": "2"}
    with pytest.raises(ConflictError) as stale:  # the old resourceVersion no longer matches
        await rt_client.update(got)
    assert "the object has been modified" in stale.value.message

    merged = await rt_client.patch(CM, "a", {"data": {"m": "x"}}, namespace=namespace)
    assert merged["data"] == {"k": "2", "m": "x"}
    jsonp = await rt_client.patch(
        CM, "a", [{"op": "remove", "path": "/data/m"}], namespace=namespace, patch_type="json"
    )
    assert jsonp["data"] == {"k": "2"}

    applied = await rt_client.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": namespace},
            "data": {"owned": "yes"},
        },
        field_manager="tester",
    )
    assert applied["data"]["owned"] == "yes"
    managers = {f["manager"] for f in applied["metadata"]["managedFields"]}
    assert "tester" in managers

    with pytest.raises(ConflictError):  # precondition on uid
        await rt_client.delete(CM, "a", namespace, uid="not-the-uid")
    await rt_client.delete(CM, "a", namespace, uid=created["metadata"]["uid"])
    with pytest.raises(NotFoundError) as missing:
        await rt_client.get(CM, "a", namespace)
    assert missing.value.status == 404
    await rt_client.delete(CM, "a", namespace, missing_ok=True)


async def test_invalid_object_names_the_field(rt_client: Client, namespace: str) -> None:
    with pytest.raises(InvalidError) as err:
        await rt_client.create(cm("Not_A_Valid_Name", namespace))
    assert err.value.status == 422
    assert any(c.get("field") == "metadata.name" for c in err.value.causes)


async def test_list_pages_through_everything(rt_client: Client, namespace: str) -> None:
    for i in range(7):
        await rt_client.create(cm(f"p{i}", namespace))
    listed = await rt_client.list(CM, namespace, label_selector="app=t", limit=2)
    assert sorted(o["metadata"]["name"] for o in listed.items) == [f"p{i}" for i in range(7)]
    assert all(o["kind"] == "ConfigMap" and o["apiVersion"] == "v1" for o in listed.items)
    assert listed.resource_version


async def test_status_subresource_and_late_crd_discovery(
    rt_client: Client, namespace: str, control_plane: ControlPlane, tmp_path: Path
) -> None:
    gvk = GVK("late.okra-runtime.dev", "v1", "Gadget")
    with pytest.raises(NoKindMatchError):
        await rt_client.resource(gvk)
    crd = tmp_path / "gadget.yaml"
    crd.write_text("""\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.late.okra-runtime.dev}
spec:
  group: late.okra-runtime.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
""")
    control_plane.install_crds([crd])
    res = await rt_client.resource(gvk)  # a miss refreshes discovery once
    assert (res.plural, res.namespaced, "status" in res.subresources) == ("gadgets", True, True)
    obj = await rt_client.create(
        {
            "apiVersion": "late.okra-runtime.dev/v1",
            "kind": "Gadget",
            "metadata": {"name": "g", "namespace": namespace},
            "spec": {"x": 1},
            "status": {"ignored": True},
        }
    )
    assert "status" not in obj  # status is only written through the subresource
    obj["status"] = {"phase": "Ready"}
    obj = await rt_client.update_status(obj)
    assert obj["status"] == {"phase": "Ready"}
    obj["spec"]["x"] = 2
    obj["status"] = {"phase": "Ignored"}
    obj = await rt_client.update(obj)
    assert (obj["spec"]["x"], obj["status"]["phase"]) == (2, "Ready")
