"""The local control plane is a real Kubernetes API: CRDs, watches, RBAC,
garbage collection, namespace deletion, kubectl with kustomize, isolation."""

from __future__ import annotations

import asyncio
import json
import textwrap
import uuid
from pathlib import Path

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from okra_testkit.envtest import UNPRIVILEGED, ControlPlane
from support import api_client, eventually

WIDGET_CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.okra.dev
    spec:
      group: example.okra.dev
      scope: Namespaced
      names: {plural: widgets, singular: widget, kind: Widget}
      versions:
      - name: v1
        served: true
        storage: true
        subresources: {status: {}}
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                properties:
                  size: {type: integer, minimum: 1}
    """)


@pytest.fixture(scope="module")
def widget_crd(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("crds") / "widget.yaml"
    path.write_text(WIDGET_CRD)
    assert control_plane.install_crds([path]) == ["widgets.example.okra.dev"]
    return "widgets.example.okra.dev"


def widget(name: str, size: int) -> dict[str, object]:
    return {
        "apiVersion": "example.okra.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


async def test_custom_object_is_watched(
    kube: client.ApiClient, namespace: str, widget_crd: str
) -> None:
    objs = client.CustomObjectsApi(kube)
    created = await objs.create_namespaced_custom_object(
        "example.okra.dev", "v1", namespace, "widgets", widget("w1", 1)
    )
    seen: list[tuple[str, int]] = []

    async def watch_two_events() -> None:
        w = watch.Watch()
        async with w.stream(
            objs.list_namespaced_custom_object,
            "example.okra.dev",
            "v1",
            namespace,
            "widgets",
            resource_version=created["metadata"]["resourceVersion"],
            timeout_seconds=30,
        ) as stream:
            async for event in stream:
                seen.append((event["type"], event["object"]["spec"]["size"]))
                if len(seen) == 2:
                    return

    watcher = asyncio.create_task(watch_two_events())
    await asyncio.sleep(0)  # let the watch open before the writes it must see
    current = await objs.get_namespaced_custom_object(
        "example.okra.dev", "v1", namespace, "widgets", "w1"
    )
    current["spec"]["size"] = 2
    await objs.replace_namespaced_custom_object(
        "example.okra.dev", "v1", namespace, "widgets", "w1", current
    )
    await objs.create_namespaced_custom_object(
        "example.okra.dev", "v1", namespace, "widgets", widget("w2", 3)
    )
    await asyncio.wait_for(watcher, 30)
    assert seen == [("MODIFIED", 2), ("ADDED", 3)]


async def test_crd_schema_is_enforced(
    kube: client.ApiClient, namespace: str, widget_crd: str
) -> None:
    objs = client.CustomObjectsApi(kube)
    with pytest.raises(ApiException) as err:
        await objs.create_namespaced_custom_object(
            "example.okra.dev", "v1", namespace, "widgets", widget("bad", 0)
        )
    assert err.value.status == 422
    assert "spec.size" in str(err.value.body)


async def test_rbac_denies_unprivileged_user_until_granted(
    control_plane: ControlPlane, kube: client.ApiClient, namespace: str
) -> None:
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"), data={"k": "v"})
    async with await api_client(control_plane, UNPRIVILEGED) as alice:
        with pytest.raises(ApiException) as err:
            await client.CoreV1Api(alice).create_namespaced_config_map(namespace, cm)
        assert err.value.status == 403
        assert err.value.body is not None
        message = json.loads(err.value.body)["message"]
        assert f'User "{UNPRIVILEGED}" cannot create resource "configmaps"' in message

        await client.CoreV1Api(kube).create_namespaced_config_map(namespace, cm)  # admin may

        rbac = client.RbacAuthorizationV1Api(kube)
        await rbac.create_namespaced_role(
            namespace,
            client.V1Role(
                metadata=client.V1ObjectMeta(name="cm-writer"),
                rules=[
                    client.V1PolicyRule(
                        api_groups=[""], resources=["configmaps"], verbs=["create", "get"]
                    )
                ],
            ),
        )
        await rbac.create_namespaced_role_binding(
            namespace,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="alice-cm-writer"),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="Role", name="cm-writer"
                ),
                subjects=[
                    client.RbacV1Subject(
                        kind="User", name=UNPRIVILEGED, api_group="rbac.authorization.k8s.io"
                    )
                ],
            ),
        )
        cm2 = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg2"))

        # The authorizer sees the new binding through its own cache: allowed soon, not
        # necessarily at once (a run in another order once got 403 here).
        async def allowed() -> bool:
            try:
                await client.CoreV1Api(alice).create_namespaced_config_map(namespace, cm2)
            except ApiException as e:
                if e.status == 403:
                    return False
                raise
            return True

        assert await eventually(allowed, within=15)
        created = await client.CoreV1Api(alice).read_namespaced_config_map("cfg2", namespace)
        assert created.metadata.name == "cfg2"


async def test_owner_reference_cascade(kube: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(kube)
    owner = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    await core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(
                name="child",
                owner_references=[
                    client.V1OwnerReference(
                        api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid
                    )
                ],
            )
        ),
    )
    await core.delete_namespaced_config_map("owner", namespace)

    async def child_gone() -> bool:
        try:
            await core.read_namespaced_config_map("child", namespace)
        except ApiException as e:
            return e.status == 404
        return False

    assert await eventually(child_gone, within=60), "garbage collector did not delete child"


async def test_namespace_deletion_completes(kube: client.ApiClient) -> None:
    core = client.CoreV1Api(kube)
    name = f"t-del-{uuid.uuid4().hex[:8]}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    await core.create_namespaced_config_map(
        name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x"))
    )
    await core.delete_namespace(name)

    async def gone() -> bool:
        try:
            await core.read_namespace(name)
        except ApiException as e:
            return e.status == 404
        return False

    assert await eventually(gone, within=60), "namespace controller did not finish deletion"


async def test_kubectl_apply_kustomize(
    control_plane: ControlPlane, kube: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        textwrap.dedent(f"""\
        namespace: {namespace}
        namePrefix: demo-
        commonLabels: {{app: demo}}
        configMapGenerator:
        - name: settings
          literals: [mode=canary]
          options: {{disableNameSuffixHash: true}}
        """)
    )
    out = control_plane.kubectl("apply", "-k", str(tmp_path))
    assert "configmap/demo-settings" in out.stdout
    cm = await client.CoreV1Api(kube).read_namespaced_config_map("demo-settings", namespace)
    assert cm.data == {"mode": "canary"}
    assert cm.metadata.labels == {"app": "demo"}


async def test_two_control_planes_are_isolated(
    control_plane: ControlPlane, workload_plane: ControlPlane
) -> None:
    assert control_plane.server != workload_plane.server
    name = f"iso-{uuid.uuid4().hex[:8]}"
    async with await api_client(control_plane) as mgmt, await api_client(workload_plane) as work:
        await client.CoreV1Api(mgmt).create_namespaced_config_map(
            "default",
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"plane": "mgmt"}),
        )
        with pytest.raises(ApiException) as err:
            await client.CoreV1Api(work).read_namespaced_config_map(name, "default")
        assert err.value.status == 404
        await client.CoreV1Api(work).create_namespaced_config_map(
            "default",
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"plane": "workload"}),
        )
        a = await client.CoreV1Api(mgmt).read_namespaced_config_map(name, "default")
        b = await client.CoreV1Api(work).read_namespaced_config_map(name, "default")
        assert (a.data, b.data) == ({"plane": "mgmt"}, {"plane": "workload"})
    # Credentials of one plane are not valid on the other.
    assert control_plane.token() != workload_plane.token()
