"""okra: the operator CLI.

    okra get cell web --watch        the rollout, live
    okra status web --timeout 30m    wait for Healthy (exit 0) or Degraded (exit 1)
    okra plan web                    the rollout okra would perform, from live reads
    okra lint cell.yaml              offline checks with file:line messages
    okra promote web                 end the current pause
    okra abort web / okra retry web
    okra set version web v1.4.2
    okra run analysis --template success-rate --wait

It talks to the API server directly (okra_runtime's Client; no kubectl). The
commands only read objects and write small merge patches: the Cell controller
does the rest, so everything the CLI does is visible in the objects and
survives the CLI exiting. Expected failures (a missing Cell, an API error,
no rollout to promote) print one `error:` line with the server's message and
exit 1; a traceback means a bug.

Modules: `parser` (the command line) and `groups/` (one module per resource
registering its commands), `get` (views, --watch), `render` (pure text
rendering), `view` (which objects a Cell's view shows), `actions` (pure: what
promote/pause/abort/retry/set write), `commands` (those writes), `status`,
`plan`, `lint`, `analysis` (run, get, terminate), `version`, `completion`,
`kube` (connection, namespace, errors).

Start-up cost matters (`okra --help`, completion): this package and the
parser import only the standard library; a command's module (and with it the
Kubernetes client, pydantic, the controllers) is imported when it runs.
`kubectl okra ...` runs the same `main` (console script `kubectl-okra`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from okra_controllers.cli.parser import build_parser, resolve

if TYPE_CHECKING:
    from okra_controllers.cli.kube import Context

DEMO_MODULE = "okra_testkit.demo"


def prog_name() -> str:
    """`kubectl okra` when run as the kubectl plugin, else `okra`."""
    base = os.path.basename(sys.argv[0] or "okra")
    return "kubectl okra" if base.startswith("kubectl-okra") else "okra"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(prog_name())
    args = parser.parse_args(argv)
    if getattr(args, "demo", False):
        return demo(args.demo_args)
    if getattr(args, "handler", None) is None:
        usage: argparse.ArgumentParser = getattr(args, "usage", parser)
        usage.print_help(sys.stderr)
        return 2
    if not args.offline:  # offline commands (completion, lint) stay light; they log nothing
        setup_logging(args.verbose)
    if args.kubeconfig is not None and not os.path.isfile(os.path.expanduser(args.kubeconfig)):
        print(f"error: kubeconfig {args.kubeconfig} does not exist", file=sys.stderr)
        return 1
    try:
        if args.offline:
            result = resolve(args.handler)(args)
            if not isinstance(result, int):  # an async handler: run it
                import asyncio

                result = asyncio.run(_offline(result))
            return result
        import asyncio

        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`okra get cell web --watch | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def setup_logging(verbose: bool) -> None:
    from okra_runtime.logging import configure_logging

    configure_logging("console", "debug" if verbose else "critical")


async def _offline(awaitable: object) -> int:
    result = await awaitable  # type: ignore[misc]
    assert isinstance(result, int)
    return result


async def _run(args: argparse.Namespace) -> int:
    from okra_controllers.cli.kube import CliError, Context, connect, default_namespace, explain

    handler = resolve(args.handler)
    if getattr(args, "all_namespaces", False):
        namespace: str | None = None
    else:
        namespace = args.namespace or default_namespace(args.kubeconfig, args.context)
    try:
        client = await connect(args.kubeconfig, args.context)
        try:
            ctx: Context = Context(client, namespace or "", all_namespaces=namespace is None)
            code = await handler(ctx, args)  # type: ignore[misc]
            assert isinstance(code, int)
            return code
        finally:
            await client.close()
    except Exception as e:
        message = explain(e)
        if message is None:
            raise
        sys.stdout.flush()
        print(f"error: {message}", file=sys.stderr)
        return e.code if isinstance(e, CliError) else 1


def demo(argv: Sequence[str]) -> int:
    """`okra demo`: runs `okra_testkit.demo.main()` when okra-testkit (the test harness, a
    distribution of its own that okra never requires) is installed."""
    package = DEMO_MODULE.partition(".")[0]
    if importlib.util.find_spec(package) is None or importlib.util.find_spec(DEMO_MODULE) is None:
        print(
            f"error: okra demo is not available: it needs okra-testkit ({DEMO_MODULE}), "
            "which this installation lacks (in a checkout of okra: make demo)",
            file=sys.stderr,
        )
        return 1
    module = importlib.import_module(DEMO_MODULE)
    entry = getattr(module, "main", None)
    if entry is None:
        print(f"error: {DEMO_MODULE} has no main()", file=sys.stderr)
        return 1
    import asyncio
    import inspect

    sys.argv = ["okra demo", *argv]
    try:
        result = entry()
        if inspect.isawaitable(result):
            result = asyncio.run(result)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        return 130
    return result if isinstance(result, int) else 0


__all__ = ["main"]
