"""Orchestrator of bench/runtime (start it through run.sh, which installs what it needs).

It starts one fresh local control plane (okra_testkit.envtest, no kube-controller-manager), then
for each implementation in turn: creates BENCH_COUNT ConfigMaps (label bench=1, small data) in a
namespace of its own (`bench-<impl>`), starts the implementation as a subprocess and measures

- time to first full sync: synced - started (the impl's own timestamps);
- events/s: BENCH_COUNT / (reconciled - started);
- peak RSS: VmHWM of the impl, read as soon as it reports "reconciled";
- RSS per 10k cached objects: VmRSS at "reconciled" - VmRSS at "started", scaled to 10,000;
- CPU seconds the impl used until "reconciled" (utime + stime, from /proc).

That start is repeated `--rounds` times on the same objects (a fresh process each time) and the
table shows each figure's median with its min and max. In the last round only, phase 2 patches
data.gen of every object `--updates` times (default 10: gen 2, 3, ..., 11; 50 in flight) and
measures updates/s until the impl reports "updated" (every object seen at the last gen), which is
bounded by how fast the apiserver takes the writes (printed beside it), and the CPU seconds the
impl spent on those count x updates watch events: a window of tens of seconds, the steady figure.

Then it kills the implementation and deletes its ConfigMaps, so every implementation meets the
same apiserver state. The table goes to stdout, the figures to bench/runtime/results.json. The
DESIGN.md section 6 targets are printed as information: the exit code never depends on them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from okra_testkit.envtest import ControlPlane

HERE = Path(__file__).resolve().parent
IN_FLIGHT = 50
PER_10K = 10_000
_PR_SET_PDEATHSIG = 1
_CLK_TCK = os.sysconf("SC_CLK_TCK")

OKRA, KOPF, CR = "okra_runtime", "kopf", "controller-runtime"
IMPL_NAMES = {"okra": OKRA, "okra_runtime": OKRA, "kopf": KOPF, "controller-runtime": CR}


@dataclass
class Impl:
    name: str
    argv: list[str]
    skip: str | None = None  # why it is not run


@dataclass
class Round:
    """One start of an implementation: what it reported and what /proc said then."""

    log: str = ""
    t_started: float | None = None
    t_synced: float | None = None
    t_reconciled: float | None = None
    rss_started_kib: int | None = None
    rss_reconciled_kib: int | None = None
    hwm_reconciled_kib: int | None = None
    cpu_reconciled_s: float | None = None
    cpu_started_s: float | None = None
    t_patch_start: float | None = None  # phase 2, last round only
    t_patch_end: float | None = None
    t_updated: float | None = None
    hwm_updated_kib: int | None = None
    cpu_updated_s: float | None = None
    cpu_patch_start_s: float | None = None

    def phase1(self, count: int) -> dict[str, float | None]:
        out: dict[str, float | None] = dict.fromkeys(PHASE1)
        if self.t_started is not None and self.t_synced is not None:
            out["sync_s"] = self.t_synced - self.t_started
        if self.t_started is not None and self.t_reconciled is not None:
            out["events_per_s"] = count / (self.t_reconciled - self.t_started)
        if self.hwm_reconciled_kib is not None:
            out["peak_rss_mib"] = self.hwm_reconciled_kib / 1024
        if self.rss_started_kib is not None and self.rss_reconciled_kib is not None:
            delta = self.rss_reconciled_kib - self.rss_started_kib
            out["rss_per_10k_mib"] = delta / 1024 * PER_10K / count
        out["cpu_reconciled_s"] = self.cpu_reconciled_s
        if self.cpu_started_s is not None and self.cpu_reconciled_s is not None:
            out["cpu_work_s"] = self.cpu_reconciled_s - self.cpu_started_s
        return out


PHASE1 = (
    "events_per_s",
    "sync_s",
    "peak_rss_mib",
    "rss_per_10k_mib",
    "cpu_reconciled_s",
    "cpu_work_s",
)


@dataclass
class Measurement:
    impl: str
    namespace: str = ""
    skipped: str | None = None
    error: str | None = None
    create_per_s: float | None = None  # the orchestrator's create rate before the impl started
    rounds: list[Round] = field(default_factory=list)
    # phase 1: the median over rounds
    events_per_s: float | None = None
    sync_s: float | None = None
    peak_rss_mib: float | None = None
    rss_per_10k_mib: float | None = None
    cpu_reconciled_s: float | None = None
    cpu_work_s: float | None = None  # from "started" (imports done) to "reconciled"
    # phase 2 (last round)
    write_per_s: float | None = None
    updates_per_s: float | None = None
    update_lag_after_last_write_s: float | None = None
    update_events: int = 0  # count x updates
    cpu_updates_s: float | None = None  # impl CPU from the first patch to "updated"
    cpu_per_10k_updates_s: float | None = None

    def derive(self, count: int, updates: int = 1) -> None:
        per_round = [r.phase1(count) for r in self.rounds]
        for key in PHASE1:
            values = [v for f in per_round if (v := f[key]) is not None]
            setattr(self, key, statistics.median(values) if values else None)
        last = self.rounds[-1] if self.rounds else Round()
        writes = count * updates
        if last.t_patch_start is not None and last.t_patch_end is not None:
            self.write_per_s = writes / (last.t_patch_end - last.t_patch_start)
        if last.t_patch_start is not None and last.t_updated is not None:
            self.update_events = writes
            self.updates_per_s = writes / (last.t_updated - last.t_patch_start)
            if last.t_patch_end is not None:
                self.update_lag_after_last_write_s = last.t_updated - last.t_patch_end
        if last.cpu_patch_start_s is not None and last.cpu_updated_s is not None and writes:
            self.cpu_updates_s = last.cpu_updated_s - last.cpu_patch_start_s
            self.cpu_per_10k_updates_s = self.cpu_updates_s * PER_10K / writes

    def spread(self, count: int, key: str, digits: int = 0) -> str:
        """'min-max' of a phase-1 figure over the rounds, for the report."""
        values = [v for r in self.rounds if (v := r.phase1(count)[key]) is not None]
        if len(values) < 2:
            return ""
        return f"{min(values):,.{digits}f}-{max(values):,.{digits}f}"


# -- /proc -------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM in KiB."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def proc_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime, stime


def _die_with_parent() -> None:  # between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# -- the objects ---------------------------------------------------------------


async def bounded(count: int, work: Callable[[int], Awaitable[object]]) -> None:
    """Run work(0..count-1) with IN_FLIGHT calls at a time."""
    it = iter(range(count))

    async def worker() -> None:
        for i in it:
            await work(i)

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))


def cm_name(i: int) -> str:
    return f"cm-{i:05d}"


async def create_objects(v1: Any, ns: str, count: int) -> float:
    with contextlib.suppress(k8s.ApiException):
        await v1.create_namespace({"metadata": {"name": ns}})

    async def create(i: int) -> None:
        body = {
            "metadata": {"name": cm_name(i), "labels": {"bench": "1"}},
            "data": {"gen": "1", "value": f"object {i}"},
        }
        await v1.create_namespaced_config_map(ns, body)

    t0 = time.time()
    await bounded(count, create)
    return count / (time.time() - t0)


def final_gen(updates: int) -> str:
    """data.gen after `updates` patches of every object (created at gen 1)."""
    return str(1 + updates)


async def patch_objects(v1: Any, ns: str, count: int, updates: int) -> None:
    """Patch every object `updates` times: all to gen 2, then all to gen 3, and so on."""
    for gen in range(2, 2 + updates):

        async def patch(i: int, gen: int = gen) -> None:
            await v1.patch_namespaced_config_map(cm_name(i), ns, {"data": {"gen": str(gen)}})

        await bounded(count, patch)


async def delete_objects(v1: Any, ns: str) -> None:
    await v1.delete_collection_namespaced_config_map(ns, label_selector="bench=1")


# -- one implementation ---------------------------------------------------------


def _open_log(path: Path) -> IO[bytes]:
    return open(path, "wb")


def _append_stray(path: Path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("\n# non-JSON lines the impl printed on stdout:\n" + "\n".join(lines) + "\n")


class ImplProcess:
    """The subprocess and its JSON-line events; /proc is read the moment an event arrives."""

    def __init__(self, r: Round, proc: asyncio.subprocess.Process) -> None:
        self.r = r
        self.proc = proc
        self.pid = proc.pid
        self.events: dict[str, asyncio.Event] = {
            e: asyncio.Event() for e in ("started", "synced", "reconciled", "updated")
        }
        self.exited = asyncio.Event()
        self.stray: list[str] = []

    async def read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
                event, t = msg["event"], float(msg["t"])
            except (ValueError, KeyError, TypeError):
                self.stray.append(raw.decode(errors="replace").rstrip())
                continue
            self.on_event(event, t)
        self.exited.set()

    def on_event(self, event: str, t: float) -> None:
        r, pid = self.r, self.pid
        with contextlib.suppress(OSError):
            if event == "started":
                r.t_started = t
                r.rss_started_kib = proc_status(pid)["VmRSS"]
                r.cpu_started_s = proc_cpu_s(pid)
            elif event == "synced":
                r.t_synced = t
            elif event == "reconciled":
                st = proc_status(pid)
                r.t_reconciled = t
                r.rss_reconciled_kib, r.hwm_reconciled_kib = st["VmRSS"], st["VmHWM"]
                r.cpu_reconciled_s = proc_cpu_s(pid)
            elif event == "updated":
                r.t_updated = t
                r.hwm_updated_kib = proc_status(pid)["VmHWM"]
                r.cpu_updated_s = proc_cpu_s(pid)
        if event in self.events:
            self.events[event].set()

    async def wait(self, event: str, limit_s: float) -> None:
        waiter = asyncio.create_task(self.events[event].wait())
        dead = asyncio.create_task(self.exited.wait())
        try:
            done, _ = await asyncio.wait(
                {waiter, dead}, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            waiter.cancel()
            dead.cancel()
        if waiter in done:
            return
        if dead in done:
            raise RuntimeError(f"exited (code {await self.proc.wait()}) before {event!r}")
        raise TimeoutError(f"no {event!r} within {limit_s:.0f}s")

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        await self.proc.wait()


async def one_round(
    impl: Impl,
    v1: Any,
    env: dict[str, str],
    r: Round,
    count: int,
    updates: int,
    limit_s: float,
) -> None:
    """Start the impl, wait for it to reconcile everything (and, with `update`, for phase 2),
    kill it. Raises TimeoutError / RuntimeError when it does not get there."""
    with _open_log(Path(r.log)) as log:
        proc = await asyncio.create_subprocess_exec(
            *impl.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            preexec_fn=_die_with_parent,
            start_new_session=True,
        )
    ip = ImplProcess(r, proc)
    reader = asyncio.create_task(ip.read())
    try:
        await ip.wait("started", limit_s)
        await ip.wait("reconciled", limit_s)
        if r.t_synced is None:  # kopf may report it just after its last handler call
            with contextlib.suppress(TimeoutError):
                await ip.wait("synced", 10)
        if updates:
            with contextlib.suppress(OSError):
                r.cpu_patch_start_s = proc_cpu_s(ip.pid)
            r.t_patch_start = time.time()
            await patch_objects(v1, env["BENCH_NAMESPACE"], count, updates)
            r.t_patch_end = time.time()
            await ip.wait("updated", limit_s)
    finally:
        await ip.kill()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        if ip.stray:
            _append_stray(Path(r.log), ip.stray)


async def measure(
    impl: Impl,
    v1: Any,
    kubeconfig: Path,
    count: int,
    rounds: int,
    updates: int,
    limit_s: float,
    logs: Path,
) -> Measurement:
    ns = f"bench-{impl.name.replace('_', '-')}"
    m = Measurement(impl=impl.name, namespace=ns)
    if impl.skip:
        m.skipped = impl.skip
        say(f"[{impl.name}] skipped: {impl.skip}")
        return m
    say(f"[{impl.name}] creating {count} ConfigMaps in {ns}")
    m.create_per_s = await create_objects(v1, ns, count)
    say(f"[{impl.name}] created at {m.create_per_s:,.0f}/s")
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "BENCH_NAMESPACE": ns,
        "BENCH_COUNT": str(count),
        "BENCH_FINAL_GEN": final_gen(updates),
        "PYTHONUNBUFFERED": "1",
    }
    for i in range(1, rounds + 1):
        r = Round(log=str(logs / f"{impl.name}.{i}.log"))
        m.rounds.append(r)
        last = i == rounds
        then = f", then patch every object {updates} times" if last and updates else ""
        say(f"[{impl.name}] round {i}/{rounds}: start{then}")
        try:
            await one_round(impl, v1, env, r, count, updates if last else 0, limit_s)
        except (TimeoutError, RuntimeError) as e:
            m.error = f"round {i}: {e} (log: {r.log})"
            say(f"[{impl.name}] FAILED: {m.error}")
            break
        f = r.phase1(count)
        say(
            f"[{impl.name}] round {i}: {fmt(f['events_per_s'])} events/s, "
            f"{fmt(f['cpu_reconciled_s'], 2)} CPU s"
        )
    m.derive(count, updates)
    say(f"[{impl.name}] deleting its ConfigMaps")
    await delete_objects(v1, ns)
    return m


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- the report -----------------------------------------------------------------


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


TARGETS: list[tuple[str, str, str, float, bool]] = [
    ("okra_runtime events/s >= 5x kopf", "events_per_s", KOPF, 5.0, True),
    ("okra_runtime events/s >= 0.5x controller-runtime", "events_per_s", CR, 0.5, True),
    (
        "okra_runtime RSS per cached object <= 2x controller-runtime",
        "rss_per_10k_mib",
        CR,
        2.0,
        False,
    ),
    # issue 17's goals
    ("okra_runtime events/s >= 0.8x controller-runtime", "events_per_s", CR, 0.8, True),
    (
        "okra_runtime CPU until reconciled <= 2x controller-runtime",
        "cpu_reconciled_s",
        CR,
        2.0,
        False,
    ),
    (
        "okra_runtime CPU started -> reconciled <= 2x controller-runtime",
        "cpu_work_s",
        CR,
        2.0,
        False,
    ),
    (
        "okra_runtime CPU per update event <= 2x controller-runtime",
        "cpu_per_10k_updates_s",
        CR,
        2.0,
        False,
    ),
    (
        "okra_runtime RSS per cached object <= 1x controller-runtime",
        "rss_per_10k_mib",
        CR,
        1.0,
        False,
    ),
]


def report(results: dict[str, Measurement], count: int, meta: dict[str, Any]) -> str:
    names = list(results)
    rounds = meta["rounds"]
    rows: list[tuple[str, str, int]] = [
        ("events/s = count / (reconciled - started)", "events_per_s", 0),
        ("time to first full sync, s", "sync_s", 2),
        ("peak RSS (VmHWM at reconciled), MiB", "peak_rss_mib", 1),
        ("RSS per 10k cached objects, MiB", "rss_per_10k_mib", 1),
        ("CPU used until reconciled, s", "cpu_reconciled_s", 2),
        ("  of which after started (imports done), s", "cpu_work_s", 2),
        ("update events (count x --updates)", "update_events", 0),
        ("CPU s per 10k update events", "cpu_per_10k_updates_s", 3),
        ("updates/s (bounded by apiserver writes)", "updates_per_s", 0),
        ("  apiserver patch rate meanwhile, /s", "write_per_s", 0),
        ("  last update seen after last write, s", "update_lag_after_last_write_s", 2),
        ("(creates/s before the impl started)", "create_per_s", 0),
    ]
    label_w = max(len(r[0]) for r in rows) + 2
    col_w = max(16, *(len(n) + 5 for n in names))
    out = [
        f"bench/runtime: {count:,} ConfigMaps, informer -> workqueue -> no-op reconcile; "
        f"phase-1 figures are the median of {rounds} starts, update figures are from the last",
        f"kube-apiserver {meta['kubernetes']}, {meta['cpus']} CPUs, load average "
        f"{meta['loadavg_start']} at start, {meta['loadavg_end']} at end; wall {meta['wall_s']}s",
        "",
        " " * label_w + "".join(n.rjust(col_w) for n in names),
    ]
    for label, attr, digits in rows:
        cells = []
        for n in names:
            m = results[n]
            if m.skipped:
                cells.append("skipped")
            elif getattr(m, attr) is None and m.error:
                cells.append("failed")
            else:
                cells.append(fmt(getattr(m, attr), digits))
        out.append(label.ljust(label_w) + "".join(c.rjust(col_w) for c in cells))
    for label, key, digits in (
        ("  events/s over the starts (min-max)", "events_per_s", 0),
        ("  CPU s until reconciled (min-max)", "cpu_reconciled_s", 2),
        ("  CPU s started -> reconciled (min-max)", "cpu_work_s", 2),
    ):
        spreads = [results[n].spread(count, key, digits) for n in names]
        if any(spreads):
            out.append(label.ljust(label_w) + "".join(s.rjust(col_w) for s in spreads))
    for n in names:
        m = results[n]
        if m.skipped:
            out.append(f"  {n}: skipped: {m.skipped}")
        elif m.error:
            out.append(f"  {n}: failed: {m.error}")

    okra = results.get(OKRA)
    others = [n for n in names if n != OKRA]
    out += ["", "okra_runtime / other".ljust(label_w) + "".join(n.rjust(col_w) for n in others)]
    short = ["events/s", "time to first full sync", "peak RSS", "RSS per 10k cached objects"]
    short += ["CPU used until reconciled", "CPU started -> reconciled", "update events"]
    short += ["CPU per update event"]
    short += ["updates/s (write-bound)"]
    for label, (_, attr, _) in zip(short, rows, strict=False):
        cells = []
        for n in others:
            r = ratio(getattr(okra, attr, None), getattr(results[n], attr))
            cells.append("n/a" if r is None else f"{r:.2f}x")
        out.append(label.ljust(label_w) + "".join(c.rjust(col_w) for c in cells))

    out += ["", "DESIGN.md section 6 targets (information only, never the exit code):"]
    targets: dict[str, Any] = {}
    for text, attr, other, target, higher_better in TARGETS:
        r = ratio(getattr(okra, attr, None), getattr(results.get(other), attr, None))
        if r is None:
            verdict, met = "n/a (not measured)", None
        else:
            met = r >= target if higher_better else r <= target
            verdict = f"{r:.2f}x: {'met' if met else 'NOT met'}"
        out.append(f"  {text.ljust(64)}{verdict}")
        targets[text] = {"ratio": r, "target": target, "met": met}
    meta["targets"] = targets
    return "\n".join(out)


# -- main --------------------------------------------------------------------------


def implementations(args: argparse.Namespace) -> list[Impl]:
    wanted = [IMPL_NAMES[w.strip()] for w in args.impls.split(",") if w.strip()]
    py = args.okra_python or sys.executable
    okra = Impl(OKRA, [py, str(HERE / "okra_impl.py")])
    check = subprocess.run(
        [py, str(HERE / "okra_impl.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    if check.returncode != 0:
        why = check.stderr.strip().splitlines()[-1:] or [f"exit code {check.returncode}"]
        okra.skip = f"{why[0]} (bench/runtime/okra_impl.py is written against the planned API)"
    kopf = Impl(KOPF, [args.kopf_python, str(HERE / "kopf_impl.py")])
    if not Path(args.kopf_python).exists():
        kopf.skip = f"no {args.kopf_python} (run.sh installs it)"
    cr = Impl(CR, [args.controller_runtime])
    if not args.controller_runtime or not Path(args.controller_runtime).exists():
        cr.skip = f"no controller-runtime binary {args.controller_runtime!r} (run.sh builds it)"
    by_name = {i.name: i for i in (okra, kopf, cr)}
    return [by_name[n] for n in wanted]


async def run_all(
    impls: list[Impl], kubeconfig: Path, args: argparse.Namespace, logs: Path
) -> dict[str, Measurement]:
    cfg = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cfg.connection_pool_maxsize = IN_FLIGHT * 2
    results: dict[str, Measurement] = {}
    async with k8s.ApiClient(configuration=cfg) as api:
        v1 = k8s.CoreV1Api(api)
        for impl in impls:
            results[impl.name] = await measure(
                impl, v1, kubeconfig, args.count, args.rounds, args.updates, args.timeout, logs
            )
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--impls", default="okra,kopf,controller-runtime")
    p.add_argument("--count", type=int, default=int(os.environ.get("BENCH_COUNT", "10000")))
    p.add_argument("--rounds", type=int, default=5, help="starts per impl; medians are shown")
    p.add_argument(
        "--updates", type=int, default=10, help="patches of every object in the last round"
    )
    p.add_argument("--timeout", type=float, default=600, help="seconds per phase")
    p.add_argument("--kopf-python", default=str(HERE.parent / ".venv-kopf/bin/python"))
    p.add_argument(
        "--okra-python",
        default="",
        help="the Python that runs okra_impl.py (run.sh: okra installed as in its image); "
        "default: this one",
    )
    p.add_argument("--controller-runtime", default="", help="the built Go binary")
    p.add_argument("--out", default=str(HERE / "results.json"))
    args = p.parse_args()
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    if args.updates < 0:
        p.error("--updates must be at least 0")
    wall0 = time.time()
    impls = implementations(args)
    logs = HERE / "logs"
    logs.mkdir(exist_ok=True)
    for old in logs.glob("*.log"):
        old.unlink()
    meta: dict[str, Any] = {
        "count": args.count,
        "rounds": args.rounds,
        "updates": args.updates,
        "in_flight": IN_FLIGHT,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": {i.name: i.argv for i in impls},
    }
    say(f"starting a control plane (load average {meta['loadavg_start']})")
    with ControlPlane(name="bench", controller_manager=False) as cp:
        version = json.loads(cp.kubectl("version", "-o", "json").stdout)
        meta["kubernetes"] = version.get("serverVersion", {}).get("gitVersion")
        results = asyncio.run(run_all(impls, cp.kubeconfig(), args, logs))
    meta["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    meta["wall_s"] = round(time.time() - wall0)
    table = report(results, args.count, meta)
    print(table)
    print(f"\nresults in {args.out}; impl logs in {logs}")
    Path(args.out).write_text(
        json.dumps({"meta": meta, "results": {n: asdict(m) for n, m in results.items()}}, indent=2)
        + "\n"
    )


if __name__ == "__main__":
    main()
