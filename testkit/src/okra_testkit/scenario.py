"""okra's standard scenario, every link real, for its end-to-end test and `make demo-fleet`.

    EKS clusters in moto (tags role=web, version=vN), each API server a local control plane
      ─▶ ClusterSet writes an Argo CD cluster Secret per cluster (awsAuthConfig: EKS tokens)
      ─▶ Argo CD's ApplicationSet (cluster generator on those Secrets' labels) makes one
         Application per cluster; its application-controller deploys from a local git
         repository a ConfigMap, a Service and a TargetGroupBinding onto the cluster
      ─▶ AWSTargetGroupSet finds the bindings and writes AWSTargetGroups labelled by version
      ─▶ the Cell shifts the ALB listener rule's weights to the new version in canary steps
      ─▶ clusters deleted in moto lose their Secret, their Application, their AWSTargetGroup
         and their place in the rule.

okra-manager runs as its own process, Argo CD as its own processes (`okra_testkit.envtest.argocd`),
AWS is a moto server behind the EKS bridge (`okra_testkit.localeks`): DescribeCluster
answers point at the local API servers, which verify the EKS tokens okra and Argo CD sign.
Nothing is called in-process except to seed AWS and git and to read state back.

Test and demo machinery: the manager never imports this module.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import GVK, Client
from okra_runtime.crdgen import write_crds
from okra_runtime.errors import NotFoundError
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD
from okra_testkit.localeks import LocalEks, start_eks_plane
from okra_testkit.seed import LoadBalancer, Network, Seeder

APPLICATION = GVK("argoproj.io", "v1alpha1", "Application")
APPLICATION_SET = GVK("argoproj.io", "v1alpha1", "ApplicationSet")
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
TARGET_GROUP = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
SECRET = GVK("", "v1", "Secret")
CONFIGMAP = GVK("", "v1", "ConfigMap")
VERSION_LABEL = "okra.mumo.co/version"
CLUSTERSET_LABEL = "okra.mumo.co/clusterset"
APP_NAMESPACE = "web"
CANARY_STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "3s"}},
    {"setWeight": 50},
    {"pause": {"duration": "3s"}},
]
"""The Cell's canary: 20 %, hold, 50 %, hold, then 100 % (weights split evenly per version)."""
CANARY_TOTALS = (20, 50, 100)
"""The new version's share of the rule at each canary step, as AWS must show it."""


def _yaml(*docs: dict[str, Any]) -> str:
    return "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)


def app_manifests() -> dict[str, str]:
    """The web app every cluster runs (`apps/web/` in git): a ConfigMap and a Service."""
    return {
        "apps/web/configmap.yaml": _yaml(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "web"},
                "data": {"message": "hello from the web app"},
            }
        ),
        "apps/web/service.yaml": _yaml(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {
                    "selector": {"app": "web"},
                    "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
                },
            }
        ),
    }


def binding_manifest(cluster: str, target_group_arn: str) -> dict[str, str]:
    """The cluster's own part (`clusters/<name>/` in git): the TargetGroupBinding that puts the
    web Service behind the cluster's target group, as the platform team commits it when the
    cluster and its target group are provisioned."""
    return {
        f"clusters/{cluster}/targetgroupbinding.yaml": _yaml(
            {
                "apiVersion": "elbv2.k8s.aws/v1beta1",
                "kind": "TargetGroupBinding",
                "metadata": {"name": "web", "labels": {"role": "web"}},
                "spec": {
                    "targetGroupARN": target_group_arn,
                    "targetType": "instance",
                    "serviceRef": {"name": "web", "port": 80},
                },
            }
        )
    }


def target_group_set(namespace: str) -> dict[str, Any]:
    """The AWSTargetGroupSet `web`: for every Argo CD cluster Secret labelled role=web in
    `namespace`, an AWSTargetGroup per TargetGroupBinding labelled role=web in that cluster,
    labelled role=web and with the cluster's `version` label as its version."""
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSTargetGroupSet",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "generators": [{"argocdClusters": {"selector": {"matchLabels": {"role": "web"}}}}],
            "bindingSelector": {"matchLabels": {"role": "web"}},
            "template": {
                "metadata": {
                    "labels": {
                        "role": "web",
                        VERSION_LABEL: "{{.cluster.labels.version}}",
                        "cluster": "{{.cluster.name}}",
                    }
                }
            },
        },
    }


@dataclass
class StandardScenario:
    """The world of the scenario; `start()` builds it, `stop()` removes all of it.

    `mgmt` is the management control plane (okra and Argo CD run against it), `moto` the AWS
    emulator; `namespace` is Argo CD's namespace, which is also okra's (ClusterSet Secrets are
    written beside the ClusterSet, where Argo CD reads them). `poll` is okra's EKS and
    workload-cluster poll interval (seconds)."""

    mgmt: ControlPlane
    moto: MotoServer
    tgb_crd: Path
    namespace: str = "argocd"
    poll: float = 1.0
    base_dir: str | None = None
    keep_dir: bool = False
    """Keep the scenario's directory (okra-manager's log) after `stop()`."""
    eks: LocalEks = field(init=False)
    argocd: ArgoCD = field(init=False)
    client: Client = field(init=False)
    network: Network = field(init=False)
    alb: LoadBalancer = field(init=False)
    planes: dict[str, ControlPlane] = field(init=False, default_factory=dict)
    target_group_arns: dict[str, str] = field(init=False, default_factory=dict)
    manager_log: Path = field(init=False, default=Path())
    _manager: subprocess.Popen[bytes] | None = field(init=False, default=None)
    _dir: Path = field(init=False, default=Path())
    _started: list[str] = field(init=False, default_factory=list)

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="okra-scenario-", dir=self.base_dir))
        self.eks = LocalEks(self.moto, base_dir=self.base_dir, controller_manager=False)
        await self.eks.start()
        self._started.append("eks")
        # argocd-k8s-auth signs EKS tokens for awsAuthConfig clusters against the bridge.
        self.argocd = ArgoCD(
            self.mgmt, namespace=self.namespace, base_dir=self.base_dir, env=self.eks.aws_env()
        )
        await asyncio.to_thread(self.argocd.start)
        self._started.append("argocd")
        crds = self._dir / "crds"
        write_crds(CRD_MODELS, crds)
        await asyncio.to_thread(self.mgmt.install_crds, [crds])
        self.client = await Client.from_kubeconfig(self.mgmt.kubeconfig())
        self._started.append("client")
        self._start_manager()
        seed = Seeder(self.eks.config)
        self.network = await seed.network()
        self.alb = await seed.alb(f"web-{self.namespace}"[:32], self.network)
        assert self.argocd.git is not None
        self.argocd.git.commit(app_manifests(), "the web app")
        for obj in [*self.okra_objects(), self.application_set()]:
            await self.client.create(obj)

    async def stop(self) -> None:
        if self._manager is not None and self._manager.poll() is None:
            self._manager.terminate()
            try:
                await asyncio.to_thread(self._manager.wait, 20)
            except subprocess.TimeoutExpired:
                self._manager.kill()
                await asyncio.to_thread(self._manager.wait)
        if "client" in self._started:
            await self.client.close()
        if "argocd" in self._started:
            await asyncio.to_thread(self.argocd.stop)
        planes = list(self.planes.values())
        self.planes.clear()
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in planes))
        if "eks" in self._started:
            await self.eks.stop()
        self._started.clear()
        if self._dir != Path() and not self.keep_dir:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _start_manager(self) -> None:
        self.manager_log = self._dir / "okra-manager.log"
        with open(self.manager_log, "wb") as out:
            self._manager = subprocess.Popen(
                local_command(
                    self.mgmt.kubeconfig(),
                    self.namespace,
                    aws_endpoint_url=self.eks.endpoint_url,
                    aws_region=self.moto.region,
                    log_format="console",
                    poll_interval=self.poll,
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **EMULATOR_ENV},
            )

    def manager_tail(self, lines: int = 40) -> str:
        try:
            text = self.manager_log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # -- what the platform team applies once ---------------------------------

    def okra_objects(self) -> list[dict[str, Any]]:
        ns = self.namespace
        return [
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "ClusterSet",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {
                    "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": "web"}}}}],
                    "template": {
                        "metadata": {
                            "labels": {
                                "role": "web",
                                "cluster": "{{.awseks.cluster.name}}",
                                "version": "{{.awseks.cluster.tags.version}}",
                            }
                        }
                    },
                },
            },
            target_group_set(ns),
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "Cell",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {
                    "ingress": {
                        "type": "AWSApplicationLoadBalancer",
                        "awsApplicationLoadBalancer": {
                            "listenerARN": self.alb.listener_arn,
                            "targetGroupSelector": {"matchLabels": {"role": "web"}},
                        },
                    },
                    "replicas": 2,
                    "updateStrategy": {"type": "Canary", "canary": {"steps": CANARY_STEPS}},
                },
            },
        ]

    def application_set(self) -> dict[str, Any]:
        """One Application per cluster Secret the ClusterSet wrote (selected by its labels):
        the web app from `apps/web` plus the cluster's own `clusters/<name>` part."""
        assert self.argocd.git is not None
        repo = self.argocd.git.url
        return {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "ApplicationSet",
            "metadata": {"name": "web", "namespace": self.namespace},
            "spec": {
                "goTemplate": True,
                "goTemplateOptions": ["missingkey=error"],
                "generators": [
                    {
                        "clusters": {
                            "selector": {"matchLabels": {"role": "web", CLUSTERSET_LABEL: "web"}}
                        }
                    }
                ],
                "template": {
                    "metadata": {
                        "name": "web-{{.name}}",
                        "labels": {
                            "cluster": "{{.name}}",
                            "version": '{{index .metadata.labels "version"}}',
                        },
                    },
                    "spec": {
                        "project": "default",
                        "sources": [
                            {"repoURL": repo, "path": "apps/web", "targetRevision": "main"},
                            {
                                "repoURL": repo,
                                "path": "clusters/{{.name}}",
                                "targetRevision": "main",
                            },
                        ],
                        "destination": {"server": "{{.server}}", "namespace": APP_NAMESPACE},
                        "syncPolicy": {
                            "automated": {"prune": True, "selfHeal": True},
                            "syncOptions": ["CreateNamespace=true"],
                            "retry": {
                                "limit": 10,
                                "backoff": {"duration": "1s", "factor": 2, "maxDuration": "10s"},
                            },
                        },
                    },
                },
            },
        }

    # -- what happens over time ----------------------------------------------

    async def add_cluster(self, name: str, version: str) -> ControlPlane:
        """Provision cluster `name` of `version`: its target group in AWS and its binding in
        git, then the cluster itself (an API server with the TargetGroupBinding CRD, as the AWS
        Load Balancer Controller installs it), then the EKS cluster in AWS, tagged."""
        seed = Seeder(self.eks.config)
        arn = await seed.target_group(name, self.network)
        # The cluster's node, registered as the AWS Load Balancer Controller would (it does not
        # run here): a target group with no healthy target gets no traffic from the Cell.
        await seed.register_targets(arn, await seed.instances(1, self.network))
        self.target_group_arns[name] = arn
        assert self.argocd.git is not None
        self.argocd.git.commit(binding_manifest(name, arn), f"cluster {name}")
        assert self.eks.webhook is not None
        plane = await asyncio.to_thread(
            start_eks_plane,
            self.eks.webhook,
            name,
            base_dir=self.base_dir,
            controller_manager=False,
        )
        self.planes[name] = plane
        await asyncio.to_thread(plane.install_crds, [self.tgb_crd])
        await self.eks.register(name, plane, self.network, tags={"role": "web", "version": version})
        return plane

    async def delete_cluster(self, name: str) -> None:
        """Delete the EKS cluster in AWS and stop its API server."""
        await self.eks.delete_cluster(name, stop_plane=False)
        plane = self.planes.pop(name, None)
        if plane is not None:
            await asyncio.to_thread(plane.stop)

    # -- reading state back ------------------------------------------------------

    async def rule(self) -> dict[str, int]:
        """The forward of okra's listener rule as AWS shows it: weight by cluster name, every
        target group in the action (weight 0 included); empty while there is no rule."""
        names = {a: n for n, a in self.target_group_arns.items()}
        async with self.eks.config.client("elbv2") as elb:
            rules = (await elb.describe_rules(ListenerArn=self.alb.listener_arn))["Rules"]
        for r in rules:
            if r.get("IsDefault"):
                continue
            fwd = next((a for a in r["Actions"] if a["Type"] == "forward"), None)
            if fwd is not None:
                return {
                    names.get(t["TargetGroupArn"], t["TargetGroupArn"]): int(t["Weight"])
                    for t in fwd["ForwardConfig"]["TargetGroups"]
                }
        return {}

    async def serving(self) -> dict[str, int]:
        """The rule without its weight-0 entries."""
        return {n: w for n, w in (await self.rule()).items() if w > 0}

    async def cluster_secrets(self) -> dict[str, dict[str, str]]:
        """Argo CD cluster Secrets the ClusterSet wrote: labels by cluster name."""
        items = (
            await self.client.list(SECRET, self.namespace, label_selector=f"{CLUSTERSET_LABEL}=web")
        ).items
        return {s["metadata"]["labels"].get("cluster", ""): s["metadata"]["labels"] for s in items}

    async def applications(self) -> dict[str, dict[str, Any]]:
        """Argo CD Applications by name, with their status."""
        items = (await self.client.list(APPLICATION, self.namespace)).items
        return {a["metadata"]["name"]: a.get("status") or {} for a in items}

    async def target_groups(self) -> dict[str, str]:
        """AWSTargetGroups okra discovered: version by cluster."""
        items = (
            await self.client.list(TARGET_GROUP, self.namespace, label_selector="role=web")
        ).items
        return {
            g["metadata"]["labels"].get("cluster", g["metadata"]["name"]): g["metadata"][
                "labels"
            ].get(VERSION_LABEL, "")
            for g in items
        }

    async def cell(self) -> dict[str, Any]:
        try:
            return (await self.client.get(CELL, "web", self.namespace)).get("status") or {}
        except NotFoundError:
            return {}

    async def workload_objects(self, name: str) -> list[str]:
        """`Kind/name` of the web app's objects in cluster `name`, read with its admin token."""
        plane = self.planes[name]
        async with await Client.from_kubeconfig(plane.kubeconfig()) as c:
            found = []
            for gvk in (
                CONFIGMAP,
                GVK("", "v1", "Service"),
                GVK("elbv2.k8s.aws", "v1beta1", "TargetGroupBinding"),
            ):
                try:
                    await c.get(gvk, "web", APP_NAMESPACE)
                    found.append(f"{gvk.kind}/web")
                except NotFoundError:
                    pass
            return found
