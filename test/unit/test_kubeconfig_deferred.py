"""okra_runtime.kubeconfig: kubernetes_asyncio's connection pieces without its generated classes,
and every other use of kubernetes_asyncio in the same process unchanged. Each case runs in a
fresh interpreter, since what is checked is what a process imports."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run(code: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


GENERATED = """
def generated():
    return sorted(
        m for m in sys.modules
        if m.startswith(("kubernetes_asyncio.client.models.", "kubernetes_asyncio.client.api."))
    )
"""


def test_client_imports_no_generated_api_or_model_module() -> None:
    got = run(
        "import json, sys\n"
        + GENERATED
        + """
import okra_runtime
from okra_runtime.client import Client
print(json.dumps({"generated": generated()}))
"""
    )
    assert got["generated"] == []


def test_generated_classes_still_resolve_afterwards() -> None:
    got = run(
        "import json, sys\n"
        + GENERATED
        + """
import okra_runtime.client
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient, V1ConfigMap
import asyncio, kubernetes_asyncio

async def decode():  # the generated path: a model class looked up by name in client.models
    api = ApiClient()
    body = {"metadata": {"name": "x"}, "data": {"a": "b"}}
    obj = api._ApiClient__deserialize(body, "V1ConfigMap")
    await api.close()
    return obj

obj = asyncio.run(decode())
print(json.dumps({
    "pod": client.V1Pod.__module__,
    "api": client.CoreV1Api.__name__,
    "models": client.models.V1Pod is client.V1Pod,
    "configmap": [type(obj).__name__, obj.metadata.name, obj.data],
    "same_api_client": ApiClient is okra_runtime.kubeconfig.ApiClient,
    "watch": watch.Watch.__name__,
    "version": kubernetes_asyncio.__version__,
    "many": len(generated()) > 500,
}))
"""
    )
    assert got == {
        "pod": "kubernetes_asyncio.client.models.v1_pod",
        "api": "CoreV1Api",
        "models": True,
        "configmap": ["V1ConfigMap", "x", {"a": "b"}],
        "same_api_client": True,
        "watch": "Watch",
        "version": got["version"],
        "many": True,
    }
    assert isinstance(got["version"], str)
    assert got["version"]


def test_star_import_and_unknown_names() -> None:
    got = run(
        """
import json, okra_runtime.kubeconfig
from kubernetes_asyncio.client import *  # noqa: F403
import kubernetes_asyncio.client as c
try:
    c.NoSuchThing
except AttributeError as e:
    missing = str(e)
print(json.dumps({"star": "CoreV1Api" in dir(), "missing": missing}))
"""
    )
    assert got == {
        "star": True,
        "missing": "module 'kubernetes_asyncio.client' has no attribute 'NoSuchThing'",
    }


def test_nothing_deferred_when_kubernetes_asyncio_came_first() -> None:
    got = run(
        """
import json
import kubernetes_asyncio.client as before
import okra_runtime.kubeconfig as k
print(json.dumps({"same": k.ApiClient is before.ApiClient, "loaded": "V1Pod" in vars(before)}))
"""
    )
    assert got == {"same": True, "loaded": True}


@pytest.mark.parametrize("context", [None, "other"])
def test_kubeconfig_loads_through_the_deferred_packages(
    tmp_path: Path, context: str | None
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "main",
                "clusters": [
                    {"name": "a", "cluster": {"server": "https://127.0.0.1:6443"}},
                    {"name": "b", "cluster": {"server": "https://127.0.0.2:7443"}},
                ],
                "users": [{"name": "u", "user": {"token": "t0ken"}}],
                "contexts": [
                    {"name": "main", "context": {"cluster": "a", "user": "u"}},
                    {"name": "other", "context": {"cluster": "b", "user": "u", "namespace": "ns"}},
                ],
            }
        )
    )
    got = run(
        f"""
import asyncio, json
from okra_runtime.client import Client

async def main():
    client = await Client.from_kubeconfig({str(kubeconfig)!r}, {context!r})
    headers = await client._headers(None)
    await client.close()
    return client._host, headers["authorization"]

host, auth = asyncio.run(main())
from okra_runtime.kubeconfig import list_kube_config_contexts
contexts, current = list_kube_config_contexts(config_file={str(kubeconfig)!r})
print(json.dumps({{"host": host, "auth": auth, "contexts": [c["name"] for c in contexts]}}))
"""
    )
    host = "https://127.0.0.2:7443" if context else "https://127.0.0.1:6443"
    assert got == {"host": host, "auth": "Bearer t0ken", "contexts": ["main", "other"]}
