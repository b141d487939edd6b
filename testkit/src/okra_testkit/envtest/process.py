"""Child processes that cannot outlive the harness.

Each child started from the main thread gets `PR_SET_PDEATHSIG(SIGKILL)` on
Linux, so even a SIGKILLed test run leaves no apiserver or etcd behind. (The
signal fires when the *thread* that forked the child exits, so children started
from worker threads, e.g. `asyncio.to_thread`, go without it and rely on the
harness's normal stop.) Children run in their own session so that a terminal's
Ctrl-C reaches the harness, which then stops them in order.

`Processes` is the `Lifecycle` the control plane and Argo CD share: children started in
order on free ports (again on new ports when one was taken meanwhile), stopped in
reverse, and their directory removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

_PR_SET_PDEATHSIG = 1
_START_ATTEMPTS = 3


class ControlPlaneError(RuntimeError):
    """The control plane (or a harness on it) could not start; the message carries the
    component's log."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.setsid()


def _new_session() -> None:
    os.setsid()


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (callers retry on a race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Process:
    """One long-running child with its output in `log_path`."""

    def __init__(
        self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._env = env
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
                preexec_fn=_die_with_parent
                if threading.current_thread() is threading.main_thread()
                else _new_session,
                close_fds=True,
            )

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `timeout`; always reaps the child."""
        p = self._popen
        if p is None or p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait()

    def kill(self) -> None:
        p = self._popen
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    alive: Process | None = None,
    interval: float = 0.05,
) -> None:
    """Poll `check` until true; fail early if `alive` exits."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if alive is not None and not alive.running():
            raise RuntimeError(f"{alive.name} exited while waiting for {what}:\n{alive.tail()}")
        if time.monotonic() > deadline:
            extra = f"\n{alive.name} log:\n{alive.tail()}" if alive is not None else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{extra}")
        time.sleep(interval)


class Lifecycle:
    """A harness component that `start`s and `stop`s: `with x:` starts x and stops it
    at the end."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class Processes(Lifecycle):
    """Children of one harness, started in order (`start`, in the subclass) in the
    directory `dir` and stopped in reverse."""

    dir: Path
    keep_dir: bool
    _procs: list[Process]

    def stop(self) -> None:
        """Stop the processes in reverse order and remove the directory (unless
        `keep_dir`). Idempotent."""
        for proc in reversed(self._procs):
            proc.stop()
        self._procs.clear()
        if self.dir != Path() and self.dir.exists() and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid is not None]

    def process(self, name: str) -> Process:
        """The child named `name`."""
        for p in self._procs:
            if p.name == name:
                return p
        raise KeyError(name)

    def _start_on_free_ports(
        self,
        name: str,
        argv_for: Callable[..., list[str]],
        ready_for: Callable[..., Callable[[], bool]],
        timeout: float,
        ports: int = 2,
        env: dict[str, str] | None = None,
    ) -> Process:
        """Start `name` with `argv_for(*ports)` on `ports` free ports and wait until
        `ready_for(*ports)()`; on new ports if it exits first or is not ready in `timeout`
        (another process took a port meanwhile), at most `_START_ATTEMPTS` times."""
        last: Exception | None = None
        for _ in range(_START_ATTEMPTS):
            chosen = [free_port() for _ in range(ports)]
            proc = Process(name, argv_for(*chosen), self.dir / f"{name}.log", env=env)
            proc.start()
            self._procs.append(proc)
            try:
                wait_until(ready_for(*chosen), timeout, f"{name} to become ready", alive=proc)
                return proc
            except (RuntimeError, TimeoutError) as e:  # port race or slow start: retry
                last = e
                proc.stop()
                self._procs.remove(proc)
        raise ControlPlaneError(f"{name} did not start after {_START_ATTEMPTS} attempts: {last}")
