"""What an informer keeps, on the real API server: managedFields are dropped before
storing (the default transform) unless the transform is turned off; a kind given a
label selector in ManagerOptions is cached only for matching objects, including
objects that start or stop matching later; a resync hands every cached object to the
handlers again, spread over the period rather than at once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from okra_runtime import GVK, Client, Manager, ManagerOptions
from okra_runtime.informer import FuncHandler, Informer, InformerOptions
from support import eventually

CM = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")


def cm(name: str, ns: str, **labels: str) -> dict[str, object]:
    meta = {"name": name, "namespace": ns, "labels": labels}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": name}}


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    task = asyncio.create_task(informer.run())
    assert await informer.wait_for_sync(30)
    yield informer
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def applied(rt_client: Client, namespace: str) -> str:
    """A ConfigMap written by server-side apply, so the server records managedFields."""
    await rt_client.apply(cm("applied", namespace), field_manager="test")
    served = await rt_client.get(CM, "applied", namespace)
    assert served["metadata"].get("managedFields"), "the server should record managedFields"
    return "applied"


async def test_managed_fields_are_dropped_by_default(
    rt_client: Client, namespace: str, applied: str
) -> None:
    async with running(Informer(rt_client, CM, InformerOptions(namespace=namespace))) as inf:
        obj = inf.store.get(applied, namespace)
        assert obj is not None
        assert "managedFields" not in obj["metadata"]
        assert obj["data"] == {"k": applied}
        # and on a watch event too
        await rt_client.apply(
            {**cm(applied, namespace), "data": {"k": "2"}}, field_manager="test", force=True
        )

        async def updated() -> bool:
            o = inf.store.get(applied, namespace)
            return o is not None and o["data"] == {"k": "2"}

        assert await eventually(updated)
        obj = inf.store.get(applied, namespace)
        assert obj is not None
        assert "managedFields" not in obj["metadata"]


async def test_transform_none_keeps_objects_as_served(
    rt_client: Client, namespace: str, applied: str
) -> None:
    opts = InformerOptions(namespace=namespace, transform=None)
    async with running(Informer(rt_client, CM, opts)) as inf:
        obj = inf.store.get(applied, namespace)
        assert obj is not None
        assert obj["metadata"].get("managedFields")


async def test_label_selected_kind_caches_only_matching_objects(
    rt_client: Client, namespace: str
) -> None:
    def secret(name: str, **labels: str) -> dict[str, object]:
        meta = {"name": name, "namespace": namespace, "labels": labels}
        return {"apiVersion": "v1", "kind": "Secret", "metadata": meta}

    await rt_client.create(secret("wanted", kind="cluster"))
    await rt_client.create(secret("other"))
    mgr = Manager(
        rt_client,
        ManagerOptions(
            namespace=namespace,
            metrics_address=None,
            probe_address=None,
            label_selectors={SECRET: "kind=cluster"},
        ),
    )
    secrets = mgr.informer_for(SECRET)
    configmaps = mgr.informer_for(CM)
    assert secrets.options.label_selector == "kind=cluster"
    assert configmaps.options.label_selector is None  # other kinds are not restricted
    async with running(secrets) as inf:
        assert inf.store.keys() == [f"{namespace}/wanted"]
        await rt_client.patch(
            SECRET, "other", {"metadata": {"labels": {"kind": "cluster"}}}, namespace=namespace
        )
        await rt_client.patch(
            SECRET, "wanted", {"metadata": {"labels": {"kind": None}}}, namespace=namespace
        )

        async def swapped() -> bool:
            return inf.store.keys() == [f"{namespace}/other"]

        assert await eventually(swapped), inf.store.keys()


async def test_resync_is_spread_over_the_period(rt_client: Client, namespace: str) -> None:
    count, period = 20, 1.0
    await asyncio.gather(*(rt_client.create(cm(f"r{i}", namespace)) for i in range(count)))
    seen: dict[str, float] = {}
    same: list[bool] = []

    def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        same.append(old is new)  # a resync hands over the cached object as old and new
        seen.setdefault(new["metadata"]["name"], time.monotonic())

    inf = Informer(rt_client, CM, InformerOptions(namespace=namespace, resync_period=period))
    inf.add_handler(FuncHandler(update=on_update))
    async with running(inf):

        async def all_resynced() -> bool:
            return len(seen) == count

        assert await eventually(all_resynced, within=10)
    assert all(same)
    # 20 objects in 20 batches, period / 20 apart: the first and the last of one resync
    # are at least 19/20 of a period apart (a sleep never ends early), never one burst.
    assert max(seen.values()) - min(seen.values()) >= period * (count - 1) / count * 0.99
