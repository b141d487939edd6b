"""What makes AWS clients, as code that only asks for one sees it.

`AwsConfig` (`config`) is one. An assumed role's session (`assume`) asks its base config
for the STS client it assumes the role with, and needs nothing else of it: it takes a
`ClientMaker`, so `config` uses `assume` and `assume` knows nothing of `config`.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol


class ClientMaker(Protocol):
    """Makes an aiobotocore client for `service` (`sts`, `elbv2`, ...), closed when its
    block ends. Hashable: an assumed role's session is kept per base."""

    def client(self, service: str) -> AbstractAsyncContextManager[Any]: ...
