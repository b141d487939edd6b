"""A real Prometheus server scraping a tiny exporter whose values the test sets.

Why: the Prometheus provider (and the AnalysisRun tests built on it) must be checked against
what a real Prometheus answers, including its errors and its absence. The server is Debian's
`prometheus` (found or fetched by hack/prometheus.sh), started on a free loopback port with
its TSDB in a temporary directory and a 1s scrape interval; it runs under
`okra_testkit.envtest.process.Process`, so it dies with the test run and leaves nothing behind.

The exporter serves `/metrics` from a dict in a thread of its own, so it keeps answering while
a test's event loop is busy and lives as long as the (module-scoped) fixture.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

from okra_testkit.envtest.process import Process, free_port, wait_until

HACK_SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "prometheus.sh"
SCRAPE_INTERVAL = "1s"


def prometheus_binary() -> str:
    """$OKRA_PROMETHEUS, else what hack/prometheus.sh finds or fetches."""
    configured = os.environ.get("OKRA_PROMETHEUS")
    if configured:
        return configured
    out = subprocess.run(
        [str(HACK_SCRIPT)], capture_output=True, text=True, check=False, timeout=600
    )
    if out.returncode != 0:
        raise RuntimeError(f"hack/prometheus.sh failed:\n{out.stderr}")
    return out.stdout.strip().splitlines()[-1]


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    quoted = (
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in sorted(labels.items())
    )
    return "{" + ",".join(quoted) + "}"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class Exporter:
    """Serves gauges in the Prometheus text format; `set` changes what the next scrape sees."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._lock = threading.Lock()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="test-exporter", daemon=True
        )
        self._thread.start()

    @property
    def target(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def set(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        with self._lock:
            self._values[(name, tuple(sorted((labels or {}).items())))] = value

    def remove(self, name: str) -> None:
        """Stop exporting every series of `name` (Prometheus then marks them stale)."""
        with self._lock:
            for key in [k for k in self._values if k[0] == name]:
                del self._values[key]

    def render(self) -> str:
        with self._lock:
            items = sorted(self._values.items())
        lines, typed = [], set()
        for (name, labels), value in items:
            if name not in typed:
                lines.append(f"# TYPE {name} gauge")
                typed.add(name)
            lines.append(f"{name}{_labels(dict(labels))} {_number(value)}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class PrometheusServer:
    """Start with `with PrometheusServer() as prom:`; `prom.address` is its base URL.

    `stop()` and `start()` simulate an outage: the server comes back on the same port with the
    same data. They block (up to a few seconds) and must be called from the main thread, so the
    server keeps its die-with-the-harness guarantee."""

    def __init__(self, binary: str | None = None, base_dir: str | None = None) -> None:
        self._binary = binary
        self._base_dir = base_dir
        self.exporter: Exporter | None = None
        self.dir = Path()
        self.port = 0
        self._proc: Process | None = None

    def __enter__(self) -> PrometheusServer:
        self.dir = Path(tempfile.mkdtemp(prefix="okra-prometheus-", dir=self._base_dir))
        try:
            self._binary = self._binary or prometheus_binary()
            self.exporter = Exporter()
            self.port = free_port()
            (self.dir / "prometheus.yml").write_text(
                "global:\n"
                f"  scrape_interval: {SCRAPE_INTERVAL}\n"
                f"  evaluation_interval: {SCRAPE_INTERVAL}\n"
                "scrape_configs:\n"
                "  - job_name: exporter\n"
                f"    scrape_interval: {SCRAPE_INTERVAL}\n"
                f"    scrape_timeout: {SCRAPE_INTERVAL}\n"
                "    static_configs:\n"
                f"      - targets: ['{self.exporter.target}']\n"
            )
            self.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if self.exporter is not None:
            self.exporter.close()
            self.exporter = None
        if self.dir != Path() and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set(self, metric_name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        """Export `metric_name{labels} value` from the next scrape on."""
        assert self.exporter is not None, "prometheus harness not started"
        self.exporter.set(metric_name, value, labels)

    def remove(self, metric_name: str) -> None:
        assert self.exporter is not None, "prometheus harness not started"
        self.exporter.remove(metric_name)

    def start(self) -> None:
        if self._proc is not None and self._proc.running():
            return
        assert self._binary is not None
        proc = Process(
            "prometheus",
            [
                self._binary,
                f"--config.file={self.dir / 'prometheus.yml'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                f"--storage.tsdb.path={self.dir / 'data'}",
                "--storage.tsdb.retention.time=1h",
                "--log.level=warn",
            ],
            self.dir / "prometheus.log",
        )
        proc.start()
        try:
            wait_until(self._ready, 60, "prometheus to be ready", alive=proc)
        except BaseException:
            proc.stop()
            raise
        self._proc = proc

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None

    def running(self) -> bool:
        return self._proc is not None and self._proc.running()

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.address}/-/ready", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    async def query(self, query: str) -> dict[str, Any]:
        """The `data` of an instant query, straight from the HTTP API."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.address}/api/v1/query", params={"query": query}) as resp,
        ):
            answer: dict[str, Any] = await resp.json()
        if answer.get("status") != "success":
            raise AssertionError(f"query {query!r} failed: {answer}")
        data: dict[str, Any] = answer["data"]
        return data

    async def wait_for(
        self,
        query: str,
        predicate: Callable[[float | None], bool],
        within: float = 30,
    ) -> dict[str, Any]:
        """Poll `query` until `predicate(value)` holds, where value is the scalar's value or
        the first sample's value of a vector (None while the vector is empty; a predicate that
        raises TypeError on None counts as not yet), so `await prom.wait_for("up", lambda v:
        v > 0)` reads as it should. Returns the query's `data`; AssertionError after `within`
        seconds."""
        deadline = time.monotonic() + within
        data: dict[str, Any] = {}
        while True:
            try:
                data = await self.query(query)
                if predicate(first_value(data)):
                    return data
            except (aiohttp.ClientError, TypeError):  # down, or `None > 0` before data arrives
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"prometheus: {query!r} did not satisfy the predicate within {within:.0f}s;"
                    f" last data: {data}"
                )
            await asyncio.sleep(0.2)


def first_value(data: Mapping[str, Any]) -> float | None:
    """A scalar's value, or the first sample's value of a vector (None if there is none)."""
    result = data.get("result")
    if data.get("resultType") == "scalar" and isinstance(result, list):
        return float(result[1])
    if data.get("resultType") == "vector" and result:
        return float(result[0]["value"][1])
    return None


def vector_values(data: Mapping[str, Any]) -> list[float]:
    """The sample values of a vector query's `data` (for `wait_for` predicates)."""
    if data.get("resultType") != "vector":
        return []
    return [float(s["value"][1]) for s in data.get("result", [])]


class Traffic:
    """Latency samples per version, drawn log-normally around each version's median
    (`medians`, in ms) and set on the exporter's gauge `name` every 0.3 s while `run` runs:
    the v1 and v2 clusters a judge compares."""

    def __init__(self, prom: PrometheusServer, name: str, sigma: float) -> None:
        self.prom, self.name, self.sigma = prom, name, sigma
        self.medians: dict[str, float] = {}
        self.rng = random.Random(31)

    async def run(self) -> None:
        while True:
            for version, median in list(self.medians.items()):
                value = median * self.rng.lognormvariate(0, self.sigma)
                self.prom.set(self.name, value, {"version": version})
            await asyncio.sleep(0.3)
