"""okra_runtime side of bench/runtime: one controller for the ConfigMaps of one namespace whose
reconcile reads the object from the informer cache and counts, nothing else.

Runs with the project venv, on the event loop okra-manager would use (uvloop when installed,
unless OKRA_EVENT_LOOP=asyncio; the choice is the first line of its log), with
`configure_logging("json", "warning")` to stderr (kopf runs at WARNING too; controller-runtime logs
its few startup lines). The controller keeps the builder's defaults (one worker, as
controller-runtime's). `python okra_impl.py --check` only verifies that the okra_runtime API this
file uses is importable and exits 0, or prints what is missing and exits 3: run.py then skips okra.

Protocol: env KUBECONFIG, BENCH_NAMESPACE, BENCH_COUNT; JSON lines on stdout (see README.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time


def emit(event: str, **extra: int) -> None:
    sys.stdout.write(json.dumps({"event": event, "t": time.time(), **extra}) + "\n")
    sys.stdout.flush()


API_MISSING = 3


def check_api() -> str | None:
    """None when the API below is there, else what is missing."""
    try:
        from okra_runtime import Manager, Request, Result  # noqa: F401
        from okra_runtime.client import Client
        from okra_runtime.logging import configure_logging  # noqa: F401
    except ImportError as e:
        return f"okra_runtime API not importable yet: {e}"
    needed = [(Client, "from_kubeconfig"), (Manager, "builder"), (Manager, "informer_for")]
    needed.append((Manager, "start"))
    missing = [f"{o.__name__}.{a}" for o, a in needed if not hasattr(o, a)]
    return f"okra_runtime API incomplete, missing: {', '.join(missing)}" if missing else None


async def bench(namespace: str, count: int, final_gen: str) -> None:
    from okra_runtime import Manager, Request, Result
    from okra_runtime.client import Client
    from okra_runtime.logging import configure_logging

    emit("started")
    profiler = None
    if os.environ.get("BENCH_PROFILE"):
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    configure_logging("json", "warning")  # to stderr
    client = await Client.from_kubeconfig(os.environ["KUBECONFIG"])
    mgr = Manager(
        client,
        namespace=namespace,
        metrics_address=None,
        probe_address=None,
        leader_election=False,
    )
    informer = mgr.informer_for("v1", "ConfigMap")
    seen: set[str] = set()
    updated: set[str] = set()

    async def reconcile(req: Request) -> Result | None:
        obj = informer.store.get(req.name, req.namespace)  # the cache, as a Get would
        if obj is None:
            return None
        if req.name not in seen:
            seen.add(req.name)
            if len(seen) == count:
                if profiler is not None:  # BENCH_PROFILE=path: cProfile of the whole start
                    profiler.disable()
                    profiler.dump_stats(os.environ["BENCH_PROFILE"])
                emit("reconciled", count=len(seen))
        if req.name not in updated and (obj.get("data") or {}).get("gen") == final_gen:
            updated.add(req.name)
            if len(updated) == count:
                emit("updated", count=len(updated))
        return None

    mgr.builder("bench").for_("v1", "ConfigMap").complete(reconcile)
    run = asyncio.create_task(mgr.start())  # runs until killed
    await informer.wait_for_sync()
    emit("synced")
    await run


def main() -> None:
    problem = check_api()
    if problem is not None:
        print(problem, file=sys.stderr)
        sys.exit(API_MISSING)
    if sys.argv[1:] == ["--check"]:
        return
    try:  # the manager's event loop choice (uvloop when installed, OKRA_EVENT_LOOP)
        from okra_runtime.loop import loop_factory, run
    except ImportError:  # an okra_runtime from before okra_runtime.loop
        loop_factory, run = (lambda: ("asyncio", None)), asyncio.run  # type: ignore[assignment]
    print(f"event loop: {loop_factory()[0]}", file=sys.stderr)
    run(
        bench(
            os.environ["BENCH_NAMESPACE"],
            int(os.environ["BENCH_COUNT"]),
            os.environ.get("BENCH_FINAL_GEN", "2"),
        )
    )


if __name__ == "__main__":
    main()
