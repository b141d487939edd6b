"""Freeze commands: freeze, unfreeze, get freezes."""

from __future__ import annotations

from okra_controllers.cli.parser import Verbs, all_namespaces, output

H = "okra_controllers.cli.freeze"


def register(v: Verbs) -> None:
    p = v.command(
        v.top,
        "freeze",
        "stop the line: the namespace's Cells and ProgressiveRollouts (or those -l selects) "
        "hold at their next step; rollbacks and aborts proceed",
        f"{H}:cmd_freeze",
        epilog="examples:\n"
        "  okra freeze --reason 'INC-1234: checkout errors' \n"
        "  okra freeze --reason 'year-end' -l team=web --until 2026-12-28T08:00:00Z\n"
        "  okra freeze --reason 'game day' --until 2h\n"
        "  okra freeze --cluster-wide --namespace-selector env=production --reason 'year-end'",
    )
    p.add_argument("--reason", required=True, help="why (shown by every rollout it holds)")
    p.add_argument("-l", "--selector", help="only Cells and ProgressiveRollouts with these labels")
    p.add_argument(
        "--until",
        help="a time (RFC 3339) or a duration from now (2h); default: until okra unfreeze",
    )
    p.add_argument("--name", help="the Freeze's name (default: freeze-<random>)")
    p.add_argument("--author", help="who froze (default: the user the API server says you are)")
    p.add_argument(
        "--cluster-wide",
        action="store_true",
        help="a ClusterFreeze: the Cells and ProgressiveRollouts of every namespace",
    )
    p.add_argument(
        "--namespace-selector",
        metavar="SELECTOR",
        help="with --cluster-wide: only the namespaces with these labels (env=production)",
    )

    p = v.command(
        v.top,
        "unfreeze",
        "lift a freeze: delete the Freeze NAME (or the namespace's only one)",
        f"{H}:cmd_unfreeze",
    )
    p.add_argument("name", metavar="NAME", nargs="?")
    p.add_argument(
        "--cluster-wide", action="store_true", help="the ClusterFreeze NAME (or the only one)"
    )

    p = v.command(
        v.get,
        "freezes",
        "Freezes and ClusterFreezes: whether each applies now and until when, or when it "
        "next starts",
        f"{H}:cmd_get_freezes",
        aliases=("freeze",),
    )
    all_namespaces(p)
    output(p, choices=("json", "yaml", "name"))
