"""Connecting to the cluster, choosing the namespace, and turning the errors an
operator can expect into one clear line (never a traceback).

The namespace is `-n` if given, else the namespace of the kubeconfig context in
use (as kubectl does), else the pod's namespace in-cluster, else `default`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from okra_controllers import actors
from okra_controllers.api.validation import first_problem
from okra_runtime.client import Client
from okra_runtime.errors import ApiError, NoKindMatchError, NotFoundError
from okra_runtime.gvk import GVK
from okra_runtime.informer import FuncHandler, Informer, InformerOptions
from okra_runtime.kubeconfig import ConfigException, list_kube_config_contexts

SYNC_TIMEOUT = 30.0
SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class CliError(Exception):
    """An expected failure: printed as `error: <message>`, exit `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass
class Context:
    """What every command gets: a connected client, the namespace, and where to write."""

    client: Client
    namespace: str
    all_namespaces: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    _user: str | None = field(default=None, init=False, repr=False)
    _asked: bool = field(default=False, init=False, repr=False)

    async def whoami(self) -> str | None:
        """The username the API server knows this client by (asked once); None where it
        cannot say."""
        if not self._asked:
            self._user, self._asked = await actors.whoami(self.client), True
        return self._user

    async def acting(self, action: str, value: str | None) -> dict[str, str | None]:
        """The actor annotations to write beside `action` (its annotation's `value`)."""
        return actors.actor_annotations(await self.whoami(), action, value or "")

    @property
    def list_namespace(self) -> str | None:
        """The namespace to list in: None (every namespace) with `-A`."""
        return None if self.all_namespaces else self.namespace

    @property
    def listed_in(self) -> str:
        """Where a list was read, in words: `namespace NS`, or `any namespace` with `-A`."""
        return "any namespace" if self.all_namespaces else f"namespace {self.namespace}"

    @property
    def tty(self) -> bool:
        return self.out.isatty()

    @property
    def color(self) -> bool:
        return self.tty and "NO_COLOR" not in os.environ

    def say(self, text: str = "") -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()

    def warn(self, text: str) -> None:
        self.err.write(f"warning: {text}\n")
        self.err.flush()


@contextlib.contextmanager
def on_interrupt(callback: Callable[[], None]) -> Iterator[None]:
    """Run `callback` on SIGINT/SIGTERM (instead of KeyboardInterrupt) while inside."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, callback)
        except (NotImplementedError, RuntimeError, ValueError):
            continue
        installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


@contextlib.asynccontextmanager
async def watching(
    ctx: Context, gvk: GVK, name: str
) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
    """One named object, as it is now and again after each change (an informer on it
    alone): `async with watching(...) as changes: async for obj in changes: ...`. The
    iteration ends on Ctrl-C/SIGTERM (the caller says what that means); a deleted object
    is a CliError. Leaving the block stops the informer."""
    changed, stop = asyncio.Event(), asyncio.Event()
    informer = Informer(
        ctx.client,
        gvk,
        reading(namespace=ctx.namespace, field_selector=f"metadata.name={name}"),
    )
    informer.add_handler(
        FuncHandler(
            add=lambda _: changed.set(),
            update=lambda _a, _b: changed.set(),
            delete=lambda _: changed.set(),
        )
    )

    def interrupt() -> None:
        stop.set()
        changed.set()

    async def changes() -> AsyncIterator[dict[str, Any]]:
        if not await synced([informer], stop):
            return
        while not stop.is_set():
            changed.clear()
            obj = informer.store.get(name, ctx.namespace)
            if obj is None:
                raise CliError(f"{gvk.kind.lower()} {name} was deleted")
            yield obj
            await changed.wait()

    task = asyncio.create_task(informer.run(), name=f"informer {gvk.kind} {name}")
    try:
        with on_interrupt(interrupt):
            yield changes()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def reading(namespace: str | None, field_selector: str | None = None) -> InformerOptions:
    """Informer options for a command: its first list asks for the latest state, not the
    API server's watch cache, so that it shows what its user has just written."""
    return InformerOptions(
        namespace=namespace, field_selector=field_selector, list_from_watch_cache=False
    )


async def synced(
    informers: list[Informer], stop: asyncio.Event, within: float = SYNC_TIMEOUT
) -> bool:
    """Wait until every informer's cache is filled; False if `stop` came first.
    A cache that cannot fill (RBAC, missing CRD) is reported with its reason."""
    sync: asyncio.Future[Any] = asyncio.ensure_future(
        asyncio.gather(*(i.wait_for_sync() for i in informers))
    )
    stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait(
            {sync, stopped}, timeout=within, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        sync.cancel()
        stopped.cancel()
        await asyncio.gather(sync, stopped, return_exceptions=True)
    if stopped in done:
        return False
    if sync not in done:
        slow = [f"{i.gvk.kind} ({i.health_message})" for i in informers if not i.has_synced]
        raise CliError(f"timed out reading {', '.join(slow)}")
    return True


async def connect(kubeconfig: str | None, context: str | None) -> Client:
    try:
        return await Client.from_environment(kubeconfig, context, user_agent="okra-cli")
    except (ConfigException, OSError) as e:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise CliError(f"cannot load kubeconfig {where}: {e}") from None


def default_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig context in use; `default` when it names none."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if path is None and "KUBERNETES_SERVICE_HOST" in os.environ and SA_NAMESPACE.exists():
        return SA_NAMESPACE.read_text().strip() or "default"
    try:
        contexts, current = list_kube_config_contexts(path)
    except (ConfigException, OSError):
        return "default"  # connect() reports the real problem
    chosen: Any = current
    if context is not None:
        chosen = next((c for c in contexts or [] if c.get("name") == context), None)
    ns = ((chosen or {}).get("context") or {}).get("namespace")
    return str(ns) if ns else "default"


async def get_or_none(client: Client, gvk: Any, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return await client.get(gvk, name, namespace)
    except NotFoundError:
        return None


def explain(e: BaseException) -> str | None:
    """The one-line message for an error an operator can expect; None for a bug."""
    if isinstance(e, CliError):
        return e.message
    if isinstance(e, ApiError):
        return f"{e.message} ({e.status} {e.reason})" if e.message else str(e)
    if isinstance(e, NoKindMatchError):
        return str(e)
    if isinstance(e, ValidationError):
        return f"invalid object: {first_problem(e)}"
    if isinstance(e, (ConnectionError, OSError, TimeoutError)):
        return f"cannot reach the API server: {e.__cause__ or e}"
    if isinstance(e, ConfigException):
        return f"kubeconfig: {e}"
    return None
