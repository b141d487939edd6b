"""okra installed the way users install it, on a real node: `kubectl apply --server-side -k`
of config/default (the image set by a kustomize overlay, as `kustomize edit set image` does),
and `helm install charts/okra`. Each gives an okra-manager Pod that reaches Ready with
in-cluster config and its own ServiceAccount, takes the leader-election Lease, serves
/metrics (read through the metrics Service) and rolls a Cell from v1 to v2 in moto, with
the weights read back from moto. With kustomize, the Deployment is also rolled to a new
image tag while the Cell waits at a pause: the new Pod takes the Lease over, the rollout
keeps its id and no weight ever goes backwards; `kubectl delete -k` removes everything.
The Cell's prechecks run as real Jobs (the Job controller, the kubelet, a busybox image): a
passing one lets the version proceed, a failing one (exit 3 in its Pod) blocks it.

moto listens on the node's address, which Pods reach; the manager is pointed at it with
`--aws-endpoint-url` (an overlay patch, the chart's `aws.endpointURL`) and moto's static
credentials in its environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from e2e.conftest import BLOCKLIST, CELL, Env, cell_obj, cell_status, promote, wait_status
from installed import helm_binary
from okra_runtime import Client
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.process import wait_until
from okra_testkit.images import BUSYBOX_IMAGE
from okra_testkit.node import Node
from okra_testkit.seed import Seeder

REPO = Path(__file__).resolve().parents[2]
SYSTEM = "okra-system"
LEASE = "okra-manager"
OKRA_GROUP = CELL.group
MOTO_ENV = [
    {"name": "AWS_ACCESS_KEY_ID", "value": "testing"},
    {"name": "AWS_SECRET_ACCESS_KEY", "value": "testing"},
]
"""moto's static credentials, as a Pod's environment."""


def helm(cp: ControlPlane, *args: str) -> str:
    out = subprocess.run(
        [helm_binary(), "--kubeconfig", str(cp.kubeconfig()), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert out.returncode == 0, f"helm {' '.join(args)}: {out.stdout}{out.stderr}"
    return out.stdout


def _split(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":")
    return name, tag


def kustomize_overlay(directory: Path, image: str, aws_endpoint: str) -> Path:
    """An overlay of config/default that sets the image and points the manager at moto."""
    name, tag = _split(image)
    container = "/spec/template/spec/containers/0"
    patch = [
        {"op": "add", "path": f"{container}/args/-", "value": f"--aws-endpoint-url={aws_endpoint}"},
        *({"op": "add", "path": f"{container}/env/-", "value": e} for e in MOTO_ENV),
    ]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(REPO / "config" / "default", directory)],
        "images": [{"name": "okra-manager", "newName": name, "newTag": tag}],
        "patches": [
            {
                "target": {"kind": "Deployment", "name": "okra-controller-manager"},
                "patch": json.dumps(patch),
            }
        ],
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kustomization.yaml").write_text(json.dumps(kustomization, indent=2))
    return directory


def manager_pods(cp: ControlPlane) -> list[dict[str, Any]]:
    out = cp.kubectl(
        "get", "pods", "-n", SYSTEM, "-l", "app.kubernetes.io/component=manager", "-o", "json"
    )
    pods: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def lease_holder(cp: ControlPlane) -> str:
    return cp.kubectl(
        "get", "lease", LEASE, "-n", SYSTEM, "-o", "jsonpath={.spec.holderIdentity}", check=False
    ).stdout.strip()


def wait_for_leader(cp: ControlPlane, deployment: str, within: float = 180) -> str:
    """The Deployment rolled out: one manager Pod, Ready, holding the Lease. Its name."""
    # (kubectl itself runs for at most 120 s)
    cp.kubectl("rollout", "status", "-n", SYSTEM, f"deployment/{deployment}", "--timeout=110s")
    name = ""

    def led() -> bool:
        nonlocal name
        pods = manager_pods(cp)
        if len(pods) != 1 or not _ready(pods[0]):
            return False
        name = pods[0]["metadata"]["name"]
        return lease_holder(cp).startswith(f"{name}_")

    wait_until(led, within, "a Ready okra-manager Pod holding the Lease", interval=0.5)
    return name


def assert_in_cluster(cp: ControlPlane, pod: str, service_account: str) -> None:
    """It runs with the installed ServiceAccount's token and no kubeconfig flag."""
    spec = json.loads(cp.kubectl("get", "pod", pod, "-n", SYSTEM, "-o", "json").stdout)["spec"]
    assert spec["serviceAccountName"] == service_account
    args = spec["containers"][0].get("args", [])
    assert not [a for a in args if a.startswith("--kubeconfig")], args
    mounts = spec["containers"][0].get("volumeMounts", [])
    assert any(m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount" for m in mounts)


def metrics_text(cp: ControlPlane) -> str:
    """/metrics of the manager, through its metrics Service (the API server's proxy)."""
    services = json.loads(
        cp.kubectl(
            "get", "services", "-n", SYSTEM, "-l", "app.kubernetes.io/name=okra", "-o", "json"
        ).stdout
    )["items"]
    service = next(
        s for s in services if any(p.get("name") == "metrics" for p in s["spec"]["ports"])
    )
    name = service["metadata"]["name"]
    return cp.kubectl(
        "get", "--raw", f"/api/v1/namespaces/{SYSTEM}/services/{name}:metrics/proxy/metrics"
    ).stdout


async def cell_world(rt_client: Client, moto: MotoServer, namespace: str) -> Env:
    """A listener in moto for the namespace's Cell. The manager in the Pod reaches moto
    itself: the counting proxy is never started."""
    seed = Seeder(moto.config)
    network = await seed.network()
    alb = await seed.alb(f"web-{namespace[-8:]}", network)
    return Env(rt_client, seed, namespace, network, alb, CountingProxy(moto.endpoint_url))


class WeightLog:
    """Every distinct rule weight moto shows while a rollout runs, read a few times a second."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.seen: list[dict[str, int]] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            w = await self.env.rule_weights()
            if w and (not self.seen or self.seen[-1] != w):
                self.seen.append(w)
            await asyncio.sleep(0.1)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def canary(self, name: str) -> list[int]:
        return [w.get(name, 0) for w in self.seen]


async def roll_v1_to_v2(
    env: Env,
    rt_client: Client,
    namespace: str,
    *,
    at_pause: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
) -> list[dict[str, Any]]:
    """A Cell rolled from v1 to v2 through 30 %, an indefinite pause (where `at_pause` runs,
    then the rollout is promoted) and 60 %; every status seen on the way."""
    statuses: list[dict[str, Any]] = []
    await env.target_group("web-a-v1", "v1")
    steps: list[dict[str, Any]] = [
        {"setWeight": 30},
        {"pause": {}},
        {"setWeight": 60},
        {"pause": {"duration": "1s"}},
    ]
    await rt_client.create(cell_obj(namespace, env.alb.listener_arn, steps))
    await wait_status(rt_client, namespace, lambda s: s.get("health") == "Healthy", within=180)
    assert await env.rule_weights() == {"web-a-v1": 100}

    log = WeightLog(env)
    log.start()
    try:
        await env.target_group("web-a-v2", "v2")
        paused = await wait_status(
            rt_client,
            namespace,
            lambda s: s.get("currentStepIndex") == 1 and s.get("canaryVersion") == "v2",
            within=180,
        )
        statuses.append(paused)
        assert await env.rule_becomes({"web-a-v1": 70, "web-a-v2": 30})
        if at_pause is not None:
            await at_pause(paused)
            statuses.append(await cell_status(rt_client, namespace))
        await promote(rt_client, namespace)
        done = await wait_status(
            rt_client,
            namespace,
            lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy",
            within=180,
        )
        statuses.append(done)
        assert await env.rule_becomes({"web-a-v2": 100})
    finally:
        await log.stop()
    canary = log.canary("web-a-v2")
    assert canary == sorted(canary), f"a weight went backwards: {log.seen}"
    assert 60 in canary, log.seen
    return statuses


@contextlib.asynccontextmanager
async def kustomize_installed(
    cp: ControlPlane, image: str, moto: MotoServer, directory: Path
) -> AsyncIterator[str]:
    """okra installed with `kubectl apply --server-side -k` (an overlay of config/default
    for `image` and moto), and removed with `kubectl delete -k` after. Yields the manager
    Pod's name once it is Ready and holds the Lease."""
    overlay = kustomize_overlay(directory / "overlay", image, moto.endpoint_url)
    cp.kubectl("apply", "--server-side", "-k", str(overlay))
    try:
        yield await asyncio.to_thread(wait_for_leader, cp, "okra-controller-manager")
    finally:
        cp.kubectl("delete", "-k", str(overlay), "--wait=true", "--timeout=110s", check=False)


def cells_namespace(cp: ControlPlane) -> str:
    """A namespace for the test's Cell (deleted by the test while the manager runs)."""
    name = f"cells-{uuid.uuid4().hex[:8]}"
    cp.kubectl("create", "namespace", name)
    return name


async def delete_namespace(cp: ControlPlane, namespace: str) -> None:
    """Delete the test's namespace while the manager still runs (its finalizers), and wait."""
    await asyncio.to_thread(
        cp.kubectl, "delete", "namespace", namespace, "--wait=true", "--timeout=110s"
    )


async def test_kubectl_apply_k_installs_a_manager_pod_that_rolls_a_cell(
    control_plane: ControlPlane,
    node: Node,
    manager_image: str,
    moto: MotoServer,
    rt_client: Client,
    tmp_path: Path,
) -> None:
    cp = control_plane
    namespace = cells_namespace(cp)
    name, _tag = _split(manager_image)
    handover = f"{name}:handover"
    node.ctr("images", "tag", "--force", manager_image, handover)
    async with kustomize_installed(cp, manager_image, moto, tmp_path) as first:
        assert_in_cluster(cp, first, "okra-controller-manager")
        metrics = await asyncio.to_thread(metrics_text, cp)
        assert "controller_runtime_reconcile_total" in metrics

        env = await cell_world(rt_client, moto, namespace)

        async def new_image_at_pause(paused: dict[str, Any]) -> None:
            cp.kubectl(
                "set",
                "image",
                "-n",
                SYSTEM,
                "deployment/okra-controller-manager",
                f"manager={handover}",
            )
            second = await asyncio.to_thread(wait_for_leader, cp, "okra-controller-manager")
            assert second != first
            # the new leader has read the Cell and left it where it was: still paused
            await asyncio.sleep(3)
            st = await cell_status(rt_client, namespace)
            assert st.get("rolloutId") == paused.get("rolloutId"), st
            assert st.get("currentStepIndex") == 1, st
            assert await env.rule_weights() == {"web-a-v1": 70, "web-a-v2": 30}

        statuses = await roll_v1_to_v2(env, rt_client, namespace, at_pause=new_image_at_pause)
        ids = {s["rolloutId"] for s in statuses if s.get("rolloutId")}
        assert len(ids) == 1, f"the rollout id changed: {statuses}"
        await delete_namespace(cp, namespace)
    left = cp.kubectl("get", "namespace", SYSTEM, check=False)
    assert left.returncode != 0, f"{SYSTEM} is still there: {left.stdout}"
    crds = cp.kubectl("get", "crds", "-o", "name").stdout
    assert OKRA_GROUP not in crds, crds


async def test_helm_install_gives_a_manager_pod_that_rolls_a_cell(
    control_plane: ControlPlane,
    node: Node,
    manager_image: str,
    moto: MotoServer,
    rt_client: Client,
) -> None:
    cp = control_plane
    namespace = cells_namespace(cp)
    name, tag = _split(manager_image)
    values = [
        f"--set=image.repository={name}",
        f"--set=image.tag={tag}",
        "--set=image.pullPolicy=Never",
        f"--set=aws.endpointURL={moto.endpoint_url}",
        f"--set-json=extraEnv={json.dumps(MOTO_ENV)}",
    ]
    helm(
        cp,
        "install",
        "okra",
        str(REPO / "charts" / "okra"),
        "-n",
        SYSTEM,
        "--create-namespace",
        *values,
    )
    try:
        deployment = json.loads(
            cp.kubectl("get", "deployments", "-n", SYSTEM, "-o", "json").stdout
        )["items"][0]
        pod = await asyncio.to_thread(wait_for_leader, cp, deployment["metadata"]["name"])
        service_account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        assert_in_cluster(cp, pod, service_account)
        assert "controller_runtime_reconcile_total" in await asyncio.to_thread(metrics_text, cp)
        env = await cell_world(rt_client, moto, namespace)
        await roll_v1_to_v2(env, rt_client, namespace)
        await delete_namespace(cp, namespace)
    finally:
        helm(cp, "uninstall", "okra", "-n", SYSTEM, "--wait")
        # Helm leaves the CRDs (crds/) and the namespace it created: as a user would
        crds = [
            c for c in cp.kubectl("get", "crds", "-o", "name").stdout.split() if OKRA_GROUP in c
        ]
        if crds:
            cp.kubectl("delete", *crds, "--wait=true", check=False)
        cp.kubectl("delete", "namespace", SYSTEM, "--wait=true", "--timeout=110s", check=False)


def check(name: str, script: str) -> dict[str, Any]:
    """A Cell check run as a Job: `script` in the node's busybox image (imported into the
    node: a tagged image's default pull policy, IfNotPresent, never pulls it)."""
    return {
        "name": name,
        "job": {
            "template": {
                "spec": {
                    "image": BUSYBOX_IMAGE,
                    "command": ["sh", "-c", script],
                }
            }
        },
    }


async def test_precheck_jobs_run_on_the_node_a_failing_one_blocks_the_version(
    control_plane: ControlPlane,
    manager_image: str,
    moto: MotoServer,
    rt_client: Client,
    tmp_path: Path,
) -> None:
    """The Cell's precheck Jobs are run by the Job controller and the kubelet: a passing one
    lets v1 roll out, a failing one (exit 3 in its Pod) blocks v2 before any traffic moves,
    and the Cell's status and RolloutFailed Event say its exit code and last log line: the
    Job's condition says only that its backoff limit was reached, okra reads them from the
    Pod's terminated container status (`FallbackToLogsOnError`)."""
    cp = control_plane
    namespace = cells_namespace(cp)
    async with kustomize_installed(cp, manager_image, moto, tmp_path):
        env = await cell_world(rt_client, moto, namespace)
        await env.target_group("web-a-v1", "v1")
        passes = check("run-test", "echo all 40 tests passed")
        cell = cell_obj(  # no wait before the rollback of a failed precheck (default 60 s)
            namespace,
            env.alb.listener_arn,
            [{"setWeight": 50}],
            prechecks=[passes],
            rollbackDelaySeconds=0,
        )
        await rt_client.create(cell)
        st = await wait_status(rt_client, namespace, lambda s: s.get("health") == "Healthy")
        assert [(r["stage"], r["phase"]) for r in st["checks"]] == [("precheck", "Succeeded")]
        assert await env.rule_weights() == {"web-a-v1": 100}
        (job,) = json.loads(cp.kubectl("get", "jobs", "-n", namespace, "-o", "json").stdout)[
            "items"
        ]
        assert job["status"].get("succeeded") == 1, job["status"]
        logs = cp.kubectl("logs", "-n", namespace, f"job/{job['metadata']['name']}").stdout
        assert "all 40 tests passed" in logs

        fails = check("run-test", "echo collecting; echo '2 of 40 tests failed'; exit 3")
        await rt_client.patch(CELL, "web", {"spec": {"prechecks": [fails]}}, namespace=namespace)
        await env.target_group("web-a-v2", "v2")
        st = await wait_status(rt_client, namespace, lambda s: s.get("phase") == "Error")
        assert st["health"] == "Degraded"
        assert "precheck run-test failed (Job web-" in st["message"]
        assert "v2 is blocked" in st["message"]
        said = "BackoffLimitExceeded: exit code 3: 2 of 40 tests failed"  # from the Pod
        assert said in st["message"], st["message"]
        assert [r.get("message") for r in st["checks"] if r["phase"] == "Failed"] == [said]
        assert await env.rule_weights() == {"web-a-v1": 100}
        blocked = await rt_client.get(BLOCKLIST, "web", namespace)
        assert [i["version"] for i in blocked["spec"]["items"]] == ["v2"]
        failed = [
            j
            for j in json.loads(cp.kubectl("get", "jobs", "-n", namespace, "-o", "json").stdout)[
                "items"
            ]
            if j["status"].get("failed")
        ]
        assert len(failed) == 1
        container = failed[0]["spec"]["template"]["spec"]["containers"][0]
        assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
        # the Job controller's condition says only that the backoff limit was reached
        (condition,) = [c for c in failed[0]["status"]["conditions"] if c["type"] == "Failed"]
        assert condition["message"] == "Job has reached the specified backoff limit"
        assert (
            f"precheck run-test failed (Job {failed[0]['metadata']['name']}: {said})"
            in (st["message"])
        )
        pods = json.loads(
            cp.kubectl(
                "get",
                "pods",
                "-n",
                namespace,
                "-l",
                f"batch.kubernetes.io/job-name={failed[0]['metadata']['name']}",
                "-o",
                "json",
            ).stdout
        )["items"]
        (terminated,) = [p["status"]["containerStatuses"][0]["state"]["terminated"] for p in pods]
        assert terminated["exitCode"] == 3
        assert "2 of 40 tests failed" in terminated["message"]  # FallbackToLogsOnError
        # The Event names the failed precheck, its Job and what its Pod said (okra reads the
        # Pod once: the Job's conditions say only BackoffLimitExceeded).
        events = json.loads(
            cp.kubectl(
                "get",
                "events",
                "-n",
                namespace,
                "--field-selector",
                "involvedObject.kind=Cell,reason=RolloutFailed",
                "-o",
                "json",
            ).stdout
        )["items"]
        assert any(
            "precheck run-test failed (Job web-" in e["message"] and said in e["message"]
            for e in events
        ), events
        await delete_namespace(cp, namespace)
