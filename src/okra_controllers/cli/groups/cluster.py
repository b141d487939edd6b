"""Cluster commands: get clusters (Argo CD cluster Secrets)."""

from __future__ import annotations

from okra_controllers.cli.parser import Verbs, all_namespaces, output


def register(v: Verbs) -> None:
    p = v.command(
        v.get,
        "clusters",
        "Argo CD cluster Secrets: cluster, server, labels, owning ClusterSet",
        "okra_controllers.cli.get:cmd_get_clusters",
        aliases=("cluster",),
    )
    all_namespaces(p)
    output(p)
