"""kubernetes_asyncio's connection pieces, without its generated API and model classes.

okra_runtime's `Client` uses four things from kubernetes_asyncio: `Configuration` (host, TLS,
credentials), `ApiClient` (the aiohttp session built from it, and bearer-token refresh),
kubeconfig loading (exec plugins, auth providers, token files) and in-cluster config. Importing
any of them the ordinary way runs `kubernetes_asyncio/client/__init__.py`, which imports every
generated API class and model (about 860 modules, ~0.15 CPU s and ~33 MiB of RSS per process)
that a raw-dict client never uses.

This module imports kubernetes_asyncio's packages `kubernetes_asyncio`,
`kubernetes_asyncio.client` and `kubernetes_asyncio.client.models` *deferred*: the package
objects exist (with their real `__path__`, so every submodule imports as usual) but their
`__init__` runs only when a name it defines is first looked up (`client.CoreV1Api`,
`models.V1Pod`, `from kubernetes_asyncio.client import *`); then it runs in full, in the same
module object. Code in the same process that uses the generated classes keeps working, it pays
the import when it first touches them instead of every process paying it at start. When
kubernetes_asyncio was imported before this module, nothing is deferred.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any


def _defer_package(name: str) -> types.ModuleType:
    """`name` (a package) in sys.modules without having run its `__init__`: submodules import
    as usual; the first lookup of a name that is not a submodule runs `__init__` in full."""
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an importable package")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def load_on_lookup(attr: str) -> Any:  # PEP 562: called only for names not (yet) defined
        if not attr.startswith("__") and importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")
        module.__dict__.pop("__getattr__", None)
        loader.exec_module(module)  # the real __init__, once, in this module object
        try:
            return module.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__getattr__ = load_on_lookup  # type: ignore[method-assign]
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


_package = _defer_package("kubernetes_asyncio")
_client = _defer_package("kubernetes_asyncio.client")
_defer_package("kubernetes_asyncio.client.models")

from kubernetes_asyncio.client.api_client import ApiClient  # noqa: E402
from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402

# kubernetes_asyncio.config imports these two names from the package itself.
if "ApiClient" not in _client.__dict__:
    setattr(_client, "ApiClient", ApiClient)  # noqa: B010
    setattr(_client, "Configuration", Configuration)  # noqa: B010

from kubernetes_asyncio.config import (  # noqa: E402
    list_kube_config_contexts,
    load_incluster_config,
    load_kube_config,
)
from kubernetes_asyncio.config.config_exception import ConfigException  # noqa: E402

__all__ = [
    "ApiClient",
    "ConfigException",
    "Configuration",
    "list_kube_config_contexts",
    "load_incluster_config",
    "load_kube_config",
]
