"""kopf side of bench/runtime: a kopf operator whose handler does nothing but count.

Runs in bench/.venv-kopf (see bench/requirements.txt), embedded with `kopf.run(standalone=True,
namespaces=[BENCH_NAMESPACE])`, on the default asyncio loop (no uvloop, as for okra_runtime).

Handler choice: `@kopf.on.event("v1", "configmaps")`. Every watch event still goes through kopf's
own machinery (its list-then-watch stream, the multiplexer that spawns one worker task and queue
per object, the processor that matches and invokes handlers), but an event handler writes nothing
to the API. The change-detecting handlers (`on.create` / `on.resume` / `on.update`) would make kopf
PATCH every object (its last-handled-configuration annotation and progress storage), so kopf would
be bounded by apiserver writes that neither okra_runtime nor controller-runtime make. Posting of
Kubernetes Events is disabled for the same reason.

"synced": kopf keeps no cache and has no HasSynced. The closest point is when its watcher has
consumed the whole initial LIST and dispatched every object into its per-object queue; kopf marks it
internally with `Bookmark.LISTED`, which this file observes by wrapping
`kopf._cogs.clients.watching.infinite_watch` (a private name: kopf is pinned in requirements.txt).

Protocol: env KUBECONFIG, BENCH_NAMESPACE, BENCH_COUNT; JSON lines on stdout (see README.md).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import kopf
from kopf._cogs.clients import watching


def emit(event: str, **extra: int) -> None:
    sys.stdout.write(json.dumps({"event": event, "t": time.time(), **extra}) + "\n")
    sys.stdout.flush()


emit("started")

NAMESPACE = os.environ["BENCH_NAMESPACE"]
COUNT = int(os.environ["BENCH_COUNT"])
FINAL_GEN = os.environ.get("BENCH_FINAL_GEN", "2")
_seen: set[str] = set()
_updated: set[str] = set()
_synced = False

_infinite_watch = watching.infinite_watch


async def _infinite_watch_marking_sync(**kwargs: Any) -> AsyncIterator[Any]:
    global _synced
    async for item in _infinite_watch(**kwargs):
        if (
            item is watching.Bookmark.LISTED
            and kwargs["resource"].plural == "configmaps"
            and not _synced
        ):
            _synced = True
            emit("synced")
        yield item


watching.infinite_watch = _infinite_watch_marking_sync


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False  # no Kubernetes Events: no writes the others do not make


@kopf.on.event("v1", "configmaps")
async def on_configmap(name: str, body: kopf.Body, type: str | None, **_: Any) -> None:
    if type == "DELETED":
        return
    if name not in _seen:
        _seen.add(name)
        if len(_seen) == COUNT:
            emit("reconciled", count=len(_seen))
    if name not in _updated and body.get("data", {}).get("gen") == FINAL_GEN:
        _updated.add(name)
        if len(_updated) == COUNT:
            emit("updated", count=len(_updated))


def main() -> None:
    logging.basicConfig(level=os.environ.get("BENCH_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    kopf.run(standalone=True, clusterwide=False, namespaces=[NAMESPACE])


if __name__ == "__main__":
    main()
