"""Child processes that cannot outlive the harness.

Each child started from the main thread gets `PR_SET_PDEATHSIG(SIGKILL)` on
Linux, so even a SIGKILLed test run leaves no apiserver or etcd behind. (The
signal fires when the *thread* that forked the child exits, so children started
from worker threads, e.g. `asyncio.to_thread`, go without it and rely on the
harness's normal stop.) Children run in their own session so that a terminal's
Ctrl-C reaches the harness, which then stops them in order.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


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
