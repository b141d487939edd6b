"""Fuzzed input: while one valid Cell rolls out, thousands of generated okra objects.

A seeded `random.Random` (`OKRA_FUZZ_SEED` replays a run) mutates valid base objects of
okra's kinds (Cell, AWSTargetGroup, AWSApplicationLoadBalancerConfig, AnalysisTemplate,
AnalysisRun, ClusterSet, AWSTargetGroupSet, AWSTargetGroupBinding, Pause,
VersionBlocklist): wrong types, missing and unknown fields, very long step lists, huge and
unicode strings, negative and over-limit numbers, malformed durations, expressions and
ARNs, empty selectors (matching everything). `OKRA_FUZZ_OBJECTS` of them (default 2,000;
`make fuzz` runs 10,000) are created through the real API server, 16 at a time, against a
real okra-manager, while the valid Cell walks v2 -> v3.

Holds: every object is either rejected by the API server (4xx with a message) or
accepted; a sample of the accepted ones of each kind okra reconciles carries a status
(condition, message, phase, observedGeneration) or a Warning Event; okra-manager never
exits and logs no traceback and no error-level line (AWS refusing a made-up ARN is a
reported cause: one warning per object, counted and printed); its RSS stays bounded;
the valid Cell completes its rollout with every sampled rule totalling 100. Printed: the
counts, RSS before and after, and the valid Cell's rollout time alone (v1 -> v2), under
the same objects created in a namespace okra-manager does not watch (v2 -> v3: the
machine's share of the noise, API server and etcd and this client on shared cores), under
them once more in a second such namespace (v3 -> v4), and under the fuzzed objects in its
own namespace (v4 -> v5). The difference between the last two is okra's handling of the
bad input; the difference between the two controls is what the order of the runs alone
does (etcd and the API server's caches hold 10,000 objects more each time), the spread
that figure is read against. With them, okra-manager's AWS calls and CPU
seconds during each of the two rollouts (figures the machine's load blurs less than
times). Timings are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import Env, OkraManager, cell_obj, cell_status
from okra_runtime import GVK, Client
from okra_runtime.errors import ApiError
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.apimetrics import apiserver_requests
from support import eventually

GROUP = "okra.mumo.co/v1alpha1"
COUNT = int(os.environ.get("OKRA_FUZZ_OBJECTS", "2000"))
SEED = int(os.environ.get("OKRA_FUZZ_SEED", "1717"))
PARALLEL = 16
SAMPLE = 25
"""Accepted objects checked for a report, per kind."""
REPORTING_KINDS = (
    "Cell",
    "AWSApplicationLoadBalancerConfig",
    "AnalysisRun",
    "ClusterSet",
    "AWSTargetGroupSet",
    "AWSTargetGroupBinding",
)
"""Kinds okra-manager reconciles and reports on; the others (templates, configs, target
groups, pauses, blocklists) are read through the objects that name them."""
STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "2s"}},
    {"setWeight": 50},
    {"pause": {"duration": "2s"}},
    {"setWeight": 80},
]
RSS_GROWTH_LIMIT_KIB = 768 * 1024

UNICODE = "ünïcødé-日本語-🦄-\u202e-\u0000-\ufeff-\U0001d518"
DURATIONS = ["5x", "-1s", "1e9h", "", "s", "10", "1h1h1h", "999999999999h", "1.5.5s", "∞s"]
EXPRESSIONS = ["result <", "((((((", "result[0] >", "__import__('os')", "len(result) >> 2", "1/0"]
ARNS = ["arn:", "arn:aws:elasticloadbalancing", "not-an-arn", "arn:aws:iam::x", "🦄" * 40]


def bases(ns: str) -> list[dict[str, Any]]:
    """One valid object of each fuzzed kind (none of them selected by the valid Cell)."""
    fake_listener = (
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/fz/0123456789abcdef/"
        "0123456789abcdef"
    )
    fake_tg = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/fz/0123456789abcdef"
    metric = {
        "name": "m",
        "interval": "1s",
        "count": 2,
        "successCondition": "result < 0.05",
        "provider": {"web": {"url": "http://127.0.0.1:9/x", "jsonPath": "{$.v}"}},
    }

    def obj(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": GROUP,
            "kind": kind,
            "metadata": {"name": "x", "namespace": ns, "labels": {"fuzz": "yes"}},
            "spec": spec,
        }

    cell = cell_obj(ns, fake_listener, copy.deepcopy(STEPS))
    cell["spec"]["ingress"]["awsApplicationLoadBalancer"]["targetGroupSelector"] = {
        "matchLabels": {"fuzz": "yes"}
    }
    cell["metadata"].update(name="x", labels={"fuzz": "yes"})
    return [
        cell,
        obj("AWSTargetGroup", {"arn": fake_tg}),
        obj(
            "AWSApplicationLoadBalancerConfig",
            {
                "listenerARN": fake_listener,
                "forwardTargetGroups": [
                    {"name": "a", "arn": fake_tg, "weight": 60},
                    {"name": "b", "arn": fake_tg.replace("fz", "fz-b"), "weight": 40},
                ],
            },
        ),
        obj("AnalysisTemplate", {"args": [{"name": "version"}], "metrics": [metric]}),
        obj("AnalysisRun", {"metrics": [metric]}),
        obj(
            "ClusterSet",
            {"generators": [{"awseks": {"clusterSelector": {"matchTags": {"fz": "1"}}}}]},
        ),
        obj(
            "AWSTargetGroupSet",
            {
                "generators": [{"awseks": {"clusterSelector": {"matchTags": {"fz": "1"}}}}],
                "template": {"metadata": {"labels": {"fuzz": "yes"}}},
            },
        ),
        obj(
            "AWSTargetGroupBinding",
            {"targetGroupARN": fake_tg, "targets": [{"name": "t", "ids": ["i-0"], "port": 80}]},
        ),
        obj("Pause", {"expireTime": "2030-01-01T00:00:00Z"}),
        obj("VersionBlocklist", {"items": [{"version": "fz-1", "cause": "fuzz"}]}),
    ]


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        node = node[p]
    return node


def _set(node: Any, path: tuple[Any, ...], value: Any) -> None:
    _get(node, path[:-1])[path[-1]] = value


def _junk(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            -1,
            2**53,
            -(2**31),
            1.5,
            "",
            UNICODE,
            rng.choice(DURATIONS),
            rng.choice(EXPRESSIONS),
            rng.choice(ARNS),
            "x" * rng.choice([254, 4097, 65536]),
            [],
            [1, "a", None],
            {},
            {"matchLabels": {}},
            {"unknownField": UNICODE},
        ]
    )


def _long(s: str, n: int) -> str:
    return (s * (n // max(len(s), 1) + 1))[:n]


def mutate(obj: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One to four mutations under spec (and sometimes the name or labels)."""
    out = copy.deepcopy(obj)
    for _ in range(rng.randint(1, 4)):
        spec_paths = [p for p in _paths(out["spec"], ("spec",)) if len(p) > 1]
        op = rng.random()
        if op < 0.04:
            out["metadata"]["name"] = rng.choice(["UPPER", "a" * 300, "-x-", "ü"])
        elif op < 0.08:
            out["metadata"]["labels"] = {rng.choice(["fuzz", "a/b/c", "x" * 70]): UNICODE}
        elif op < 0.12 and out["kind"] == "Cell" and isinstance(out["spec"], dict):
            out["spec"]["updateStrategy"] = {"type": "Canary", "canary": {}}
            out["spec"]["updateStrategy"]["canary"]["steps"] = [
                rng.choice([{"setWeight": rng.randint(-5, 120)}, {"pause": {"duration": "1s"}}])
                for _ in range(rng.choice([65, 500, 3000]))
            ]
        elif op < 0.18:
            out["spec"] = _junk(rng) if rng.random() < 0.3 else {}
        elif not spec_paths:
            out["spec"] = {"unknown": _junk(rng)}
        else:
            path = rng.choice(spec_paths)
            value = _get(out, path)
            r = rng.random()
            if r < 0.25:
                del _get(out, path[:-1])[path[-1]]  # a missing field
            elif isinstance(value, bool) or value is None:
                _set(out, path, _junk(rng))
            elif isinstance(value, int):
                _set(out, path, rng.choice([-1, -100, 101, 1000, 2**40, "50", 0.5, None]))
            elif isinstance(value, str):
                _set(
                    out,
                    path,
                    rng.choice(
                        [
                            value + UNICODE,
                            _long(value, rng.choice([1000, 100_000])),
                            rng.choice(DURATIONS),
                            rng.choice(EXPRESSIONS),
                            rng.choice(ARNS),
                            12345,
                            [value],
                        ]
                    ),
                )
            elif isinstance(value, dict):
                if rng.random() < 0.5:
                    value[rng.choice(["unknownField", "matchExpressions", UNICODE[:8]])] = _junk(
                        rng
                    )
                else:
                    _set(out, path, rng.choice([{}, [], "dict", 7]))
            elif isinstance(value, list):
                if value and len(value) < 64 and rng.random() < 0.5:
                    value.extend(copy.deepcopy(value[0]) for _ in range(rng.choice([40, 200])))
                else:
                    _set(out, path, rng.choice([[], {}, "list", [None]]))
    return out


def generate(base: list[dict[str, Any]], i: int, seed: int) -> dict[str, Any]:
    """Object `i` of the run (its own RNG: generated when applied, replayable alone)."""
    rng = random.Random(seed * 1_000_003 + i)
    b = rng.choice(base)
    # About one in seven left valid: accepted, it must be reconciled (and fail in AWS).
    o = copy.deepcopy(b) if rng.random() < 0.15 else mutate(b, rng)
    if o["metadata"].get("name") == "x":
        o["metadata"]["name"] = f"fz-{i}-{o['kind'].lower()}"[:63]
    return o


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def log_lines(log: Path) -> tuple[list[str], int]:
    """Error-level and traceback lines (none is allowed: bad input is the user's to
    fix, reported in status and an Event, never a bug); and the count of warnings that
    say a reconcile failed for a reported cause (AWS refusing a made-up ARN: one per
    object, its retries at debug level)."""
    bad, reported = [], 0
    for line in log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict):
            if "Traceback" in line:
                bad.append(line)
            continue
        if rec.get("level") in ("error", "critical") or "Traceback" in line:
            bad.append(line[:2000])
        elif str(rec.get("event", "")).startswith("reconcile failed; reported"):
            reported += 1
    return bad, reported


def phases(
    log: Path, ns: str, marks: dict[str, tuple[float, float, float]]
) -> dict[str, tuple[float, float, float, float]]:
    """Each rollout of the valid Cell split in four, in seconds: the test creating the new
    target group (in AWS, then as an AWSTargetGroup); okra noticing it (created ->
    okra-manager logs RolloutStarted); okra's rollout (RolloutStarted -> RolloutCompleted,
    both from its log); the test seeing it done (-> the status read says Healthy)."""
    started: dict[str, float] = {}
    completed: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        if '"web"' not in line or "Rollout" not in line:
            continue
        rec = json.loads(line)
        if rec.get("namespace") != ns or rec.get("name") != "web":
            continue
        at = datetime.fromisoformat(rec["timestamp"]).timestamp()
        message = str(rec.get("message", ""))
        if rec.get("reason") == "RolloutStarted":
            started[message.split()[1]] = at
        elif rec.get("reason") == "RolloutCompleted":
            completed[message.split()[0]] = at
    return {
        v: (created - began, started[v] - created, completed[v] - started[v], seen - completed[v])
        for v, (began, created, seen) in marks.items()
        if v in started and v in completed
    }


def reported(obj: dict[str, Any], warned: set[tuple[str, str]]) -> bool:
    status = obj.get("status") or {}
    if (obj["kind"], obj["metadata"]["name"]) in warned:
        return True
    return bool(
        status.get("conditions")
        or status.get("message")
        or status.get("phase")
        or status.get("observedGeneration")
    )


@pytest.mark.timeout(1800)
async def test_fuzzed_objects_never_hurt_the_manager_or_a_valid_rollout(
    env: Env, rt_client: Client, namespace: str, control_plane: ControlPlane, tmp_path: Path
) -> None:
    ns, c = namespace, rt_client
    log = tmp_path / "okra.log"
    okra = OkraManager(control_plane, env, log)
    okra.start()
    assert okra.proc is not None
    pid = okra.proc.pid
    totals: list[int] = []
    unwatched = (f"{ns}-unwatched", f"{ns}-unwatched2")

    async def sample_rule() -> None:
        while True:
            weights = await env.rule_weights()
            if weights:
                totals.append(sum(weights.values()))
            await asyncio.sleep(0.2)

    marks: dict[str, tuple[float, float, float]] = {}
    """Per version: wall-clock times the test began the rollout, had created its target
    group (in AWS and as an AWSTargetGroup), and saw it done."""

    async def rollout_to(version: str, within: float) -> float:
        start, wall = time.monotonic(), time.time()
        await env.target_group(f"web-a-{version}", version)
        created = time.time()

        async def done() -> bool:
            s = await cell_status(c, ns)
            return s.get("stableVersion") == version and s.get("health") == "Healthy"

        assert await eventually(done, within=within, interval=0.1), await cell_status(c, ns)
        marks[version] = (wall, created, time.time())
        return time.monotonic() - start

    sampling = asyncio.create_task(sample_rule())
    try:
        await env.target_group("web-a-v1", "v1")
        await c.create(cell_obj(ns, env.alb.listener_arn, STEPS))

        async def healthy() -> bool:
            return (await cell_status(c, ns)).get("health") == "Healthy"

        assert await eventually(healthy, within=120), await cell_status(c, ns)
        quiet = await rollout_to("v2", 120)

        base = bases(ns)
        generated: Counter[str] = Counter()
        fuzz: Counter[str] = Counter()
        accepted: list[dict[str, Any]] = []
        odd: list[str] = []
        sem = asyncio.Semaphore(PARALLEL)

        async def under_noise(
            version: str, make: Callable[[int], dict[str, Any]], outcome: Counter[str]
        ) -> tuple[float, float, Counter[str], float, Counter[str]]:
            """Creates COUNT objects made by `make`, 16 at a time; once a tenth are in,
            rolls the valid Cell out to `version`. Returns (rollout time, apply time, the
            AWS calls okra-manager made from the start until the rollout was done, the
            CPU seconds it used meanwhile, and the requests the API server served
            meanwhile, by verb and resource: this client's creates and okra's requests)."""
            started = asyncio.Event()

            async def apply(i: int) -> None:
                async with sem:
                    if i >= COUNT // 10:
                        started.set()
                    o = make(i)
                    try:
                        await c.create(o)
                    except ApiError as e:
                        if 400 <= e.status < 500 and e.message.strip():
                            outcome["rejected"] += 1
                        else:
                            odd.append(f"{o['kind']}: {e}"[:300])
                        return
                    outcome["accepted"] += 1
                    if outcome is fuzz:
                        accepted.append(
                            {"kind": o["kind"], "metadata": {"name": o["metadata"]["name"]}}
                        )

            served = await apiserver_requests(c)
            start, cpu = time.monotonic(), cpu_seconds(pid)
            noise = asyncio.gather(*(apply(i) for i in range(COUNT)))
            await started.wait()
            took = await rollout_to(version, 600)
            done, cpu = time.monotonic(), cpu_seconds(pid) - cpu
            calls = Counter(a for t, a in env.proxy.calls if start <= t <= done)
            served = await apiserver_requests(c) - served
            await noise
            return took, time.monotonic() - start, calls, cpu, served

        # The control: the very same objects in a namespace okra-manager does not watch.
        # The API server validates, rejects and stores exactly what it does for the fuzzed
        # run, this client sends the same bytes at the rate the server allows, and okra
        # sees none of it: the rollout's time under this noise is the machine's share
        # (API server, etcd, this process on shared cores); what the fuzzed run adds on
        # top of it is okra's handling of the bad input.
        # Twice, in two such namespaces, the second just before the fuzzed run: what
        # the order alone changes is the spread the fuzzed run's difference is read in.
        for name in unwatched:
            await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        controls: list[Counter[str]] = [Counter(), Counter()]

        def unwatched_object(elsewhere: list[dict[str, Any]]) -> Callable[[int], dict[str, Any]]:
            return lambda i: generate(elsewhere, i, SEED)

        def fuzzed_object(i: int) -> dict[str, Any]:
            o = generate(base, i, SEED)
            generated[o["kind"]] += 1
            return o

        first, *_ = await under_noise("v3", unwatched_object(bases(unwatched[0])), controls[0])
        benign, benign_time, benign_calls, benign_cpu, benign_served = await under_noise(
            "v4", unwatched_object(bases(unwatched[1])), controls[1]
        )
        rss_before = rss_kib(pid)
        noisy, fuzz_time, fuzz_calls, fuzz_cpu, fuzz_served = await under_noise(
            "v5", fuzzed_object, fuzz
        )
        assert not odd, odd[:10]
        assert fuzz["rejected"] + fuzz["accepted"] == COUNT
        # the API server treated every run alike
        assert controls[0] == controls[1] == fuzz, (controls, fuzz)

        # A sample of the accepted objects of each reconciled kind, reported on.
        rng = random.Random(SEED)
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for o in accepted:
            by_kind.setdefault(o["kind"], []).append(o)
        sample = [
            o
            for kind in REPORTING_KINDS
            for o in rng.sample(by_kind.get(kind, []), min(SAMPLE, len(by_kind.get(kind, []))))
        ]
        unreported: list[str] = []

        async def all_reported() -> bool:
            events = (await c.list(GVK("", "v1", "Event"), namespace=ns)).items
            warned = {
                (e["involvedObject"].get("kind", ""), e["involvedObject"].get("name", ""))
                for e in events
                if e.get("type") == "Warning"
            }
            unreported.clear()
            for o in sample:
                live = await c.get(
                    GVK("okra.mumo.co", "v1alpha1", o["kind"]), o["metadata"]["name"], ns
                )
                if not reported(live, warned):
                    unreported.append(f"{o['kind']}/{o['metadata']['name']}")
            return not unreported

        assert await eventually(all_reported, within=180, interval=2), unreported[:20]
        assert okra.proc.poll() is None, "okra-manager exited"
        rss_after = rss_kib(pid)
        bad, reported_failures = log_lines(log)
        per_kind = generated
        acc_kind = Counter(o["kind"] for o in accepted)
        print(
            f"\nfuzzed input (seed {SEED}): {COUNT} generated, {fuzz['rejected']} rejected "
            f"by the API server, {fuzz['accepted']} accepted, {len(sample)} accepted "
            f"sampled and all reported ({', '.join(REPORTING_KINDS)}); applied in "
            f"{fuzz_time:.1f}s ({COUNT / fuzz_time:.0f}/s, {PARALLEL} at a time)\n"
            f"per kind (accepted/generated): "
            + ", ".join(f"{k} {acc_kind[k]}/{n}" for k, n in sorted(per_kind.items()))
            + f"\nokra-manager VmRSS {rss_before / 1024:.0f} MiB before, "
            f"{rss_after / 1024:.0f} MiB after\nthe valid Cell's rollout: {quiet:.1f}s "
            f"alone, {first:.1f}s then {benign:.1f}s under the same objects in two namespaces "
            f"okra does not watch (the second applied in {benign_time:.1f}s), {noisy:.1f}s "
            f"under the fuzzed objects in its namespace; fuzzed - unwatched "
            f"{noisy - benign:+.1f}s, unwatched twice {benign - first:+.1f}s; {len(totals)} rule "
            f"samples, totals {sorted(set(totals))}; error-level/traceback log lines: "
            f"{len(bad)}; warnings of reconciles failed for a reported cause (AWS "
            f"refusing made-up ARNs): "
            f"{reported_failures}\nAWS calls while the Cell rolled out: "
            f"{sum(benign_calls.values())} under the unwatched objects, "
            f"{sum(fuzz_calls.values())} under the fuzzed ones ("
            + ", ".join(f"{a} {n}" for a, n in fuzz_calls.most_common(8))
            + f")\nokra-manager CPU while the Cell rolled out: {benign_cpu:.1f}s under the "
            f"unwatched objects, {fuzz_cpu:.1f}s under the fuzzed ones"
            f"\nAPI requests served while the Cell rolled out (this client's creates "
            f"included): {sum(benign_served.values())} under the unwatched objects, "
            f"{sum(fuzz_served.values())} under the fuzzed ones; the fuzzed run's beyond "
            f"the control: "
            + ", ".join(f"{k} {n}" for k, n in (fuzz_served - benign_served).most_common(10))
        )
        split = phases(log, ns, marks)
        print(
            "the valid Cell's rollouts in four (test creates the target group / okra notices "
            "it / okra rolls out, RolloutStarted to RolloutCompleted in its log / the test "
            "sees Healthy):\n"
            + "\n".join(
                f"  {label}: " + " / ".join(f"{x:.2f}s" for x in split[v])
                for label, v in (
                    ("alone", "v2"),
                    ("unwatched", "v3"),
                    ("unwatched again", "v4"),
                    ("fuzzed", "v5"),
                )
                if v in split
            )
        )
        assert not bad, bad[:10]
        assert set(totals) == {100}, sorted(set(totals))
        assert rss_after - rss_before < RSS_GROWTH_LIMIT_KIB
    finally:
        sampling.cancel()
        okra.stop()
        for name in unwatched:
            with contextlib.suppress(ApiError):
                await c.delete(GVK("", "v1", "Namespace"), name)
