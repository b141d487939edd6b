"""The `okra dashboard` command line (the handler is imported only when it runs)."""

from __future__ import annotations

from okra_controllers.cli.parser import Verbs, all_namespaces

DEFAULT_PORT = 8765


def register(v: Verbs) -> None:
    p = v.command(
        v.top,
        "dashboard",
        "serve a live web view of Cells, ProgressiveRollouts and target groups, with "
        "promote/abort/retry/pause buttons; prints its URL",
        "okra_controllers.cli.dashboard.server:cmd_dashboard",
        epilog="examples:\n  okra dashboard -A\n  okra dashboard --port 0 --read-only\n",
    )
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any)"
    )
    p.add_argument(
        "--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    p.add_argument("--read-only", action="store_true", help="no actions: the page only shows")
    all_namespaces(p)
