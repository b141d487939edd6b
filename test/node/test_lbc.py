"""The AWS Load Balancer Controller on the node (built by `hack/build-lbc.sh` from the Go
module proxy, run beside the plane with its AWS calls sent to moto; `okra_testkit.lbc`).

From a TargetGroupBinding (target type ip) it registers the Pods behind the binding's Service
into the target group in moto: the target group's registered targets are the Pods' IPs as the
API server has them, and they follow the Deployment as it scales and as a Pod is replaced;
deleting the binding deregisters them. Nothing else registers a target here.

Then okra's Cell: its target groups get their targets only through the controller. A v2
target group with no Pods behind it holds the Cell at its health gate (no weight to v2, the
reason in the Cell's status); once v2's Deployment and binding exist, the controller registers
its Pods and the Cell sends v2 its weight. moto reports every registered target `healthy` at
once (it runs no health checks), so the gate waits exactly for the registration.

Then the standard scenario's chain, every link real on the node: Argo CD (its harness, on the
node's plane, which it also deploys to, registered by a cluster Secret labelled version v2)
syncs v2 from git: a Deployment, its Service and a TargetGroupBinding. okra's
AWSTargetGroupSet (the standard scenario's) finds the binding through that Secret and writes
v2's AWSTargetGroup; the Cell holds v2 at its health gate while git has the Deployment at no
replicas, and once a commit scales it up, the controller registers the Pod and the Cell moves
the listener rule to v2.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from e2e.conftest import VERSION_LABEL, Env, cell_obj, wait_status
from okra_runtime import Client
from okra_testkit.awsread import registered_targets
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD, ArgoCDBinaries, GitRepo, cluster_secret
from okra_testkit.images import BUSYBOX_IMAGE
from okra_testkit.lbc import LoadBalancerController
from okra_testkit.scenario import APPLICATION, TARGET_GROUP, target_group_set
from okra_testkit.seed import Network, Seeder
from support import eventually

from .test_install import cells_namespace, delete_namespace, kustomize_installed
from .test_node import apply_list

PORT = 8080


def app(name: str, replicas: int) -> list[dict[str, Any]]:
    """A Deployment of busybox httpd answering on PORT, Ready once it listens, and its
    Service (port 80)."""
    labels = {"app": name}
    serve = "mkdir -p /tmp/www && hostname > /tmp/www/index.html"
    serve += f" && exec httpd -f -p {PORT} -h /tmp/www"
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "containers": [
                            {
                                "name": "web",
                                "image": BUSYBOX_IMAGE,
                                "imagePullPolicy": "Never",
                                "command": ["sh", "-c", serve],
                                "ports": [{"containerPort": PORT}],
                                "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 1},
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": PORT}]},
        },
    ]


def binding(
    name: str, service: str, arn: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A TargetGroupBinding of `service`'s port 80 to the target group `arn`, by Pod IP.
    (`targetType` is written: the controller's mutating webhook, which would look it up, is
    not registered.)"""
    return {
        "apiVersion": "elbv2.k8s.aws/v1beta1",
        "kind": "TargetGroupBinding",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "spec": {
            "serviceRef": {"name": service, "port": 80},
            "targetGroupARN": arn,
            "targetType": "ip",
        },
    }


def pod_ips(cp: ControlPlane, namespace: str, name: str) -> set[str]:
    """The IPs of the app's Ready Pods that are not being deleted, from the API server."""
    pods = json.loads(
        cp.kubectl("get", "pods", "-n", namespace, "-l", f"app={name}", "-o", "json").stdout
    )["items"]
    return {
        p["status"]["podIP"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and p["status"].get("podIP")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions") or []
        )
    }


async def targets(moto: MotoServer, arn: str) -> dict[tuple[str, int], str]:
    """The target group's registered targets in moto, (id, port) -> state."""
    return await registered_targets(moto.config, arn)


async def registered_are_pods(
    cp: ControlPlane,
    moto: MotoServer,
    lbc: LoadBalancerController,
    namespace: str,
    name: str,
    arn: str,
    count: int,
) -> set[str]:
    """Waits until the target group's targets are exactly the app's `count` Ready Pods (their
    IPs, on PORT); returns those IPs. On a timeout the message holds what the controller
    logged about the namespace and the target group (its reconciles of the binding, the Pods
    it did not find in its cache), so that a late registration says where it waited."""
    seen: dict[str, Any] = {}

    async def ok() -> bool:
        ips = await asyncio.to_thread(pod_ips, cp, namespace, name)
        registered = await targets(moto, arn)
        seen.update(pods=ips, targets=registered)
        return len(ips) == count and set(registered) == {(ip, PORT) for ip in ips}

    if not await eventually(ok, within=90, interval=0.25):
        said = [line for line in lbc.log().splitlines() if namespace in line or arn in line]
        raise AssertionError(f"{seen}; the controller on {namespace}:\n" + "\n".join(said[-40:]))
    return set(seen["pods"])


async def ip_target_group(seed: Seeder, network: Network, name: str) -> str:
    return await seed.target_group(name[:32], network, port=PORT, target_type="ip")


async def test_the_controller_registers_the_pods_of_a_target_group_binding(
    control_plane: ControlPlane,
    load_balancer_controller: LoadBalancerController,
    moto: MotoServer,
    lbc_network: Network,
    namespace: str,
) -> None:
    cp, lbc = control_plane, load_balancer_controller
    arn = await ip_target_group(Seeder(moto.config), lbc_network, f"web-{namespace[-8:]}")
    apply_list(cp, namespace, *app("web", 2), binding("web", "web", arn))

    first = await registered_are_pods(cp, moto, lbc, namespace, "web", arn, 2)
    assert set((await targets(moto, arn)).values()) == {"healthy"}
    assert f'"registered targets","arn":"{arn}"' in lbc.log(), lbc.proc.tail()

    cp.kubectl("scale", "-n", namespace, "deployment/web", "--replicas=3")
    three = await registered_are_pods(cp, moto, lbc, namespace, "web", arn, 3)
    assert first < three

    pod = json.loads(
        cp.kubectl("get", "pods", "-n", namespace, "-l", "app=web", "-o", "json").stdout
    )["items"][0]
    gone = pod["status"]["podIP"]
    cp.kubectl("delete", "pod", "-n", namespace, pod["metadata"]["name"], "--wait=false")
    replaced = await registered_are_pods(cp, moto, lbc, namespace, "web", arn, 3)
    assert gone not in replaced
    assert len(replaced - three) == 1

    cp.kubectl("delete", "-n", namespace, "targetgroupbinding/web", "--timeout=60s")

    async def none() -> bool:
        return await targets(moto, arn) == {}

    assert await eventually(none, within=60, interval=0.25), await targets(moto, arn)


async def test_a_cell_waits_for_the_targets_the_controller_registers(
    control_plane: ControlPlane,
    load_balancer_controller: LoadBalancerController,
    manager_image: str,
    moto: MotoServer,
    lbc_network: Network,
    rt_client: Client,
    tmp_path: Path,
) -> None:
    """okra-manager installed with kustomize; both versions' target groups are filled by the
    controller alone."""
    cp, lbc = control_plane, load_balancer_controller
    namespace = cells_namespace(cp)
    seed = Seeder(moto.config)
    alb = await seed.alb(f"web-{namespace[-8:]}", lbc_network)
    env = Env(rt_client, seed, namespace, lbc_network, alb, CountingProxy(moto.endpoint_url))

    async def version(v: str) -> str:
        """v's target group in moto (empty) and its AWSTargetGroup."""
        name = f"web-a-{v}"
        arn = await ip_target_group(seed, lbc_network, f"{name}-{namespace[-6:]}")
        await rt_client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {"role": "web", VERSION_LABEL: v},
                },
                "spec": {"arn": arn},
            }
        )
        env.tg_arns[name] = arn
        return arn

    def deploy(v: str, arn: str) -> None:
        apply_list(cp, namespace, *app(f"web-{v}", 1), binding(f"web-{v}", f"web-{v}", arn))

    async with kustomize_installed(cp, manager_image, moto, tmp_path):
        v1 = await version("v1")
        deploy("v1", v1)
        steps: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {}}]
        await rt_client.create(cell_obj(namespace, alb.listener_arn, steps))
        await wait_status(rt_client, namespace, lambda s: s.get("health") == "Healthy", 180)
        assert await env.rule_weights() == {"web-a-v1": 100}
        await registered_are_pods(cp, moto, lbc, namespace, "web-v1", v1, 1)

        v2 = await version("v2")
        await wait_status(
            rt_client,
            namespace,
            lambda s: "waiting for a healthy target in web-a-v2" in (s.get("message") or ""),
            within=120,
        )
        assert await targets(moto, v2) == {}
        assert await env.rule_weights() == {"web-a-v1": 100}

        deploy("v2", v2)
        paused = await wait_status(
            rt_client,
            namespace,
            lambda s: s.get("currentStepIndex") == 1 and s.get("canaryVersion") == "v2",
            within=180,
        )
        assert "waiting for a healthy target" not in (paused.get("message") or ""), paused
        assert await env.rule_becomes({"web-a-v1": 50, "web-a-v2": 50})
        await registered_are_pods(cp, moto, lbc, namespace, "web-v2", v2, 1)
        await delete_namespace(cp, namespace)


def node_server(cp: ControlPlane) -> str:
    """The plane's API server at the node's address, which Pods (okra-manager) reach as the
    host's processes (Argo CD) do; its certificate is valid for it."""
    assert cp.node_address
    return f"https://{cp.node_address}:{urlsplit(cp.server).port}"


def commit_v2(git: GitRepo, arn: str, replicas: int) -> str:
    """v2 of the app in git (`apps/web-v2/`): the Deployment at `replicas`, its Service, and
    its binding to `arn`, labelled role=web for the AWSTargetGroupSet. The revision."""
    objects = [*app("web-v2", replicas), binding("web-v2", "web-v2", arn, {"role": "web"})]
    text = yaml.safe_dump_all(objects, sort_keys=False)
    return git.commit({"apps/web-v2/web.yaml": text}, f"web v2, {replicas} replica(s)")


def application(namespace: str, repo: str, server: str) -> dict[str, Any]:
    """The Argo CD Application of `apps/web-v2`, synced automatically to `server`."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web-v2", "namespace": namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": repo, "path": "apps/web-v2", "targetRevision": "main"},
            "destination": {"server": server, "namespace": namespace},
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "retry": {"limit": 5, "backoff": {"duration": "1s", "maxDuration": "5s"}},
            },
        },
    }


async def synced(rt_client: Client, namespace: str, revision: str) -> None:
    """Argo CD synced the Application at `revision` (its last sync operation succeeded)."""
    seen: dict[str, Any] = {}

    async def ok() -> bool:
        status = (await rt_client.get(APPLICATION, "web-v2", namespace)).get("status") or {}
        seen.update(status)
        op = status.get("operationState") or {}
        return bool(
            (status.get("sync") or {}).get("status") == "Synced"
            and op.get("phase") == "Succeeded"
            and (op.get("syncResult") or {}).get("revision") == revision
        )

    assert await eventually(ok, within=120, interval=0.5), seen


async def test_argo_cd_syncs_the_binding_the_controller_fills_and_the_cell_waits_for(
    control_plane: ControlPlane,
    load_balancer_controller: LoadBalancerController,
    argocd_binaries: ArgoCDBinaries,
    manager_image: str,
    moto: MotoServer,
    lbc_network: Network,
    rt_client: Client,
    tmp_path: Path,
) -> None:
    """okra-manager installed with kustomize; v1 as the Cell test has it, v2 from git through
    Argo CD, its AWSTargetGroup from the AWSTargetGroupSet."""
    cp, lbc = control_plane, load_balancer_controller
    namespace = cells_namespace(cp)
    seed = Seeder(moto.config)
    alb = await seed.alb(f"web-{namespace[-8:]}", lbc_network)
    env = Env(rt_client, seed, namespace, lbc_network, alb, CountingProxy(moto.endpoint_url))
    for v in ("v1", "v2"):
        env.tg_arns[v] = await ip_target_group(seed, lbc_network, f"web-{v}-{namespace[-6:]}")
    v1, v2 = env.tg_arns["v1"], env.tg_arns["v2"]
    argocd = ArgoCD(cp, namespace=namespace, bins=argocd_binaries)

    async with kustomize_installed(cp, manager_image, moto, tmp_path):
        await rt_client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": "web-v1",
                    "namespace": namespace,
                    "labels": {"role": "web", VERSION_LABEL: "v1"},
                },
                "spec": {"arn": v1},
            }
        )
        apply_list(cp, namespace, *app("web-v1", 1), binding("web-v1", "web-v1", v1))
        steps: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {}}]
        await rt_client.create(cell_obj(namespace, alb.listener_arn, steps))
        await wait_status(rt_client, namespace, lambda s: s.get("health") == "Healthy", 180)
        assert await env.rule_weights() == {"v1": 100}
        await registered_are_pods(cp, moto, lbc, namespace, "web-v1", v1, 1)

        await asyncio.to_thread(argocd.start)
        try:
            assert argocd.git is not None
            server = node_server(cp)
            secret = cluster_secret("node", cp, namespace, {"role": "web", "version": "v2"})
            secret["stringData"]["server"] = server
            argocd.apply([secret])
            first = commit_v2(argocd.git, v2, 0)
            await rt_client.create(application(namespace, argocd.git.url, server))
            await synced(rt_client, namespace, first)
            tgb = json.loads(
                cp.kubectl(
                    "get", "targetgroupbinding", "web-v2", "-n", namespace, "-o", "json"
                ).stdout
            )
            assert "argocd.argoproj.io/tracking-id" in tgb["metadata"]["annotations"], tgb

            await rt_client.create(target_group_set(namespace))
            found: dict[str, dict[str, Any]] = {}

            async def discovered() -> bool:
                groups = await rt_client.list(
                    TARGET_GROUP, namespace, label_selector=f"{VERSION_LABEL}=v2"
                )
                found.update({g["metadata"]["name"]: g for g in groups.items})
                return bool(found)

            assert await eventually(discovered, within=60, interval=0.25)
            [(name, group)] = found.items()
            assert group["spec"]["arn"] == v2
            assert group["metadata"]["labels"]["cluster"] == "node"
            await wait_status(
                rt_client,
                namespace,
                lambda s: f"waiting for a healthy target in {name}" in (s.get("message") or ""),
                within=120,
            )
            assert await targets(moto, v2) == {}
            assert await env.rule_weights() == {"v1": 100}

            second = commit_v2(argocd.git, v2, 1)
            paused = await wait_status(
                rt_client,
                namespace,
                lambda s: s.get("currentStepIndex") == 1 and s.get("canaryVersion") == "v2",
                within=180,
            )
            assert "waiting for a healthy target" not in (paused.get("message") or ""), paused
            assert await env.rule_becomes({"v1": 50, "v2": 50})
            await registered_are_pods(cp, moto, lbc, namespace, "web-v2", v2, 1)
            await synced(rt_client, namespace, second)
        finally:
            await asyncio.to_thread(argocd.stop)
        await delete_namespace(cp, namespace)
