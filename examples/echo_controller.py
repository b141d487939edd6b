"""echo: a complete, small controller built on okra_runtime.

For every ConfigMap labelled `echo.example.dev/enabled=true` it keeps a child
ConfigMap named `<name>-echo` holding the same data, owned by the parent (so
deleting the parent deletes the child, through the garbage collector). Edit or
delete the child and it is put back; edit the parent and the child follows.

Run it against any cluster:

    python examples/echo_controller.py --kubeconfig ~/.kube/config --namespace default

It shows the whole shape of a controller: a builder with `for_` (the parents),
`owns` (the children enqueue their parent) and a predicate; an idempotent
reconcile that writes only when something differs; Events; leader election;
probes and metrics; graceful shutdown on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import structlog

from okra_runtime import (
    GVK,
    Client,
    LabelSelectorPredicate,
    Manager,
    ManagerOptions,
    NotFoundError,
    Request,
    Result,
    configure_logging,
)
from okra_runtime.events import EventRecorder

CONFIGMAP = GVK("", "v1", "ConfigMap")
ENABLED = "echo.example.dev/enabled"
log = structlog.get_logger("echo")


class EchoReconciler:
    def __init__(self, manager: Manager, events: EventRecorder) -> None:
        self.client = manager.client
        self.cache = manager.informer_for(CONFIGMAP).store
        self.events = events

    async def reconcile(self, req: Request) -> Result | None:
        parent = self.cache.get(req.name, req.namespace)
        if parent is None or parent["metadata"].get("labels", {}).get(ENABLED) != "true":
            log.info("reconciled", action="skipped", reason="parent gone or not enabled")
            return None  # gone or opted out: the garbage collector removes the child
        desired = self.desired_child(parent)
        current = self.cache.get(desired["metadata"]["name"], req.namespace)
        if current is None:
            await self.client.create(desired)
            self.events.event(
                parent, "Normal", "EchoCreated", f"created {desired['metadata']['name']}"
            )
            log.info("reconciled", action="created")
        elif current.get("data") != desired["data"]:
            current["data"] = desired["data"]
            try:
                await self.client.update(current)
            except NotFoundError:
                return Result(requeue=True)
            log.info("reconciled", action="updated")
        else:
            log.info("reconciled", action="none")
        return None

    @staticmethod
    def desired_child(parent: dict[str, Any]) -> dict[str, Any]:
        meta = parent["metadata"]
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"{meta['name']}-echo",
                "namespace": meta["namespace"],
                "labels": {"echo.example.dev/parent": meta["name"]},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "data": dict(parent.get("data") or {}),
        }


def build(client: Client, options: ManagerOptions) -> Manager:
    mgr = Manager(client, options)
    reconciler = EchoReconciler(mgr, mgr.event_recorder("echo-controller"))
    (
        mgr.builder("echo")
        .for_(CONFIGMAP, predicates=(LabelSelectorPredicate({"matchLabels": {ENABLED: "true"}}),))
        .owns(CONFIGMAP)
        .with_options(max_concurrent_reconciles=2)
        .complete(reconciler)
    )
    return mgr


async def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kubeconfig")
    p.add_argument("--namespace", default=None)
    p.add_argument("--leader-elect", action="store_true")
    p.add_argument("--leader-election-namespace", default="default")
    p.add_argument("--lease-duration", type=float, default=15.0)
    p.add_argument("--renew-deadline", type=float, default=10.0)
    p.add_argument("--retry-period", type=float, default=2.0)
    p.add_argument("--identity", default=None)
    p.add_argument("--metrics-address", default="127.0.0.1:0")
    p.add_argument("--probe-address", default="127.0.0.1:0")
    p.add_argument("--log-format", choices=("json", "console"), default="console")
    a = p.parse_args(argv)
    configure_logging(a.log_format)
    opts = ManagerOptions(
        namespace=a.namespace,
        metrics_address=a.metrics_address or None,
        probe_address=a.probe_address or None,
        leader_election=a.leader_elect,
        leader_election_id="echo-controller",
        leader_election_namespace=a.leader_election_namespace,
        lease_duration=a.lease_duration,
        renew_deadline=a.renew_deadline,
        retry_period=a.retry_period,
    )
    if a.identity:
        opts.identity = a.identity
    async with await Client.from_environment(a.kubeconfig) as client:
        mgr = build(client, opts)
        await mgr.run_until_signal()


if __name__ == "__main__":
    asyncio.run(main())
