"""A moto server in a child process: okra's stand-in for AWS in tests and the
demo. okra talks to it over HTTP exactly as it would to LocalStack or AWS."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from okra_controllers.aws.config import AwsConfig
from okra_runtime.envtest.process import Process, free_port, wait_until

_ATTEMPTS = 3


def _moto_server_argv() -> list[str]:
    exe = Path(sys.executable).with_name("moto_server")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("moto_server")
    if found:
        return [found]
    raise FileNotFoundError("moto_server not found; install the dev extra: pip install 'okra[dev]'")


@dataclass
class MotoServer:
    """Start with `with MotoServer() as aws:`; `aws.config` is an AwsConfig for it."""

    region: str = "us-east-1"
    base_dir: str | None = None
    port: int = field(init=False, default=0)
    dir: Path = field(init=False, default=Path())
    _proc: Process | None = field(init=False, default=None)

    def __enter__(self) -> MotoServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config(self) -> AwsConfig:
        return AwsConfig(
            region=self.region,
            endpoint_url=self.endpoint_url,
            access_key_id="testing",
            secret_access_key="testing",
        )

    def start(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="okra-moto-", dir=self.base_dir))
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": self.region,
            "MOTO_ALLOW_NONEXISTENT_REGION": "true",
        }
        last: Exception | None = None
        for _ in range(_ATTEMPTS):
            self.port = free_port()
            proc = Process(
                "moto_server",
                [*_moto_server_argv(), "-H", "127.0.0.1", "-p", str(self.port)],
                self.dir / "moto.log",
                env=env,
            )
            proc.start()
            try:
                wait_until(self._ready, 30, "moto_server", alive=proc)
                self._proc = proc
                return
            except (RuntimeError, TimeoutError) as e:
                last = e
                proc.stop()
        self.stop()
        raise RuntimeError(f"moto_server did not start: {last}")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None
        if self.dir != Path() and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)

    def reset(self) -> None:
        """Forget every AWS resource (moto's reset API)."""
        req = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(req, timeout=10):
            pass

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            return False
