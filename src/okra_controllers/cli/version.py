"""`okra version [--client]`: the CLI's version, and, when the cluster is reachable,
the Kubernetes server's and the okra manager's.

The manager's version is its image tag: okra's install (`config/manager`) labels
the Deployment `app.kubernetes.io/name=okra, app.kubernetes.io/component=manager`.
Every failure to find it (unreachable cluster, no such Deployment, RBAC) is
reported in the output, never as an error: `version` always exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import sys
from typing import Any

MANAGER_SELECTOR = "app.kubernetes.io/name=okra,app.kubernetes.io/component=manager"
TIMEOUT = 15.0
"""How long `version` waits for the cluster before it reports it unreachable (5 s was too
short for a busy 2-core machine, where the CLI's first requests alone can take that long)."""


def client_version() -> str:
    try:
        return importlib.metadata.version("okra")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


async def cmd_version(args: argparse.Namespace) -> int:
    doc: dict[str, Any] = {
        "client": {"version": client_version(), "python": sys.version.split()[0]}
    }
    if not args.client:
        try:
            doc.update(await asyncio.wait_for(_server(args), TIMEOUT))
        except Exception as e:
            from okra_controllers.cli.kube import explain

            doc["server"] = {"error": explain(e) or f"{type(e).__name__}: {e}"}
    if args.output == "json":
        print(json.dumps(doc, indent=2))
    elif args.output == "yaml":
        import yaml

        print(yaml.safe_dump(doc, sort_keys=False), end="")
    else:
        print(f"okra (client): {doc['client']['version']}")
        if "kubernetes" in doc:
            print(f"Kubernetes (server): {doc['kubernetes'].get('gitVersion', 'unknown')}")
        if "manager" in doc:
            managers = doc["manager"]
            if isinstance(managers, str):
                print(f"okra-manager: {managers}")
            for m in managers if isinstance(managers, list) else []:
                print(
                    f"okra-manager: {m['version']}  ({m['namespace']}/{m['name']}, "
                    f"{m['ready']}/{m['replicas']} ready, image {m['image']})"
                )
        if "server" in doc:
            print(f"server: unreachable ({doc['server']['error']})")
    return 0


async def _server(args: argparse.Namespace) -> dict[str, Any]:
    from okra_controllers.api.kinds import DEPLOYMENT
    from okra_controllers.cli import setup_logging
    from okra_controllers.cli.kube import connect, explain

    setup_logging(args.verbose)
    client = await connect(args.kubeconfig, args.context)
    try:
        out: dict[str, Any] = {}
        info = await client.request("GET", "/version")
        out["kubernetes"] = {k: info.get(k) for k in ("gitVersion", "platform") if k in info}
        try:
            found = (
                await client.list(DEPLOYMENT, args.namespace, label_selector=MANAGER_SELECTOR)
            ).items
        except Exception as e:
            out["manager"] = f"unknown ({explain(e) or e})"
            return out
        managers = []
        for d in found:
            containers = d["spec"]["template"]["spec"].get("containers") or []
            image = next(
                (c.get("image", "") for c in containers if c.get("name") == "manager"),
                containers[0].get("image", "") if containers else "",
            )
            tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
            st = d.get("status") or {}
            managers.append(
                {
                    "namespace": d["metadata"]["namespace"],
                    "name": d["metadata"]["name"],
                    "version": tag,
                    "image": image,
                    "replicas": d["spec"].get("replicas", 1),
                    "ready": st.get("readyReplicas", 0),
                }
            )
        out["manager"] = managers or f"not found (no Deployment labelled {MANAGER_SELECTOR})"
        return out
    finally:
        await client.close()
