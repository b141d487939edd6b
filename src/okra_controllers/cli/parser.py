"""The command line: `okra <command> ...` (also `kubectl okra ...`).

Commands are registered by command groups, one module per resource under
`okra_controllers.cli.groups` (listed in `GROUPS`). A group's `register(v)`
adds its commands to the shared verbs (`v.get`, `v.terminate`, `v.run`,
`v.set`) or as top-level commands (`v.top`), naming each handler as a string
`"module:function"`. The handler module is imported only when its command
runs, so `okra --help` and completion never import the Kubernetes client,
pydantic or the controllers.

A handler is `async def handler(ctx: Context, args) -> int` and gets a
connected client; with `offline=True` it is `def handler(args) -> int` (sync or
async) and no connection is made.

Global flags (`--kubeconfig`, `--context`, `-n`, `-A` where accepted, `-v`)
work before and after the command.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

GROUPS = (
    "okra_controllers.cli.groups.cell",
    "okra_controllers.cli.groups.analysis",
    "okra_controllers.cli.groups.cluster",
    "okra_controllers.cli.groups.progressive",
    "okra_controllers.cli.groups.freeze",
    "okra_controllers.cli.groups.tools",
    "okra_controllers.cli.dashboard.group",
)

DESCRIPTION = """\
Operate okra: inspect Cells and their target groups, move a rollout along
(promote, pause, abort, retry), pin a version, plan or lint a rollout, run an
analysis.

examples:
  okra get cells -A --watch
  okra get cell web --watch
  okra status web --timeout 30m     # exit 0 once Healthy, 1 if Degraded
  okra plan web                     # what okra would do now (reads only)
  okra lint config/samples/*.yaml
  okra promote web                  # end the current pause / accept an inconclusive analysis
  okra promote web --full           # skip every remaining step
  okra pause web                    # hold the rollout where it is (okra promote resumes)
  okra abort web                    # all traffic back to stable, hold
  okra retry web                    # resume: unblock failed versions, remove the abort
  okra set version web v1.4.2
  okra run analysis --template success-rate --arg service=web --wait
  okra get analysisrun web-v2-5e7a1b2c-step-1
  okra get progressiverollout web --watch
  okra pause web / okra resume web  # a ProgressiveRollout: hold new syncs / go on (retry)
  okra freeze --reason 'INC-1234'   # stop the line here (okra unfreeze starts it again)
  okra get freezes -A
  okra dashboard -A                 # the live web view, on http://127.0.0.1:8765/
"""

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
OUTPUTS = ("json", "yaml", "wide", "name")


def _globals(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The global flags; on subcommands their default is SUPPRESS, so a flag given
    after the command overrides the one before it and an absent one changes nothing."""

    def d(value: object) -> object:
        return value if top else argparse.SUPPRESS

    parser.add_argument(
        "--kubeconfig",
        default=d(None),
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)",
    )
    parser.add_argument("--context", default=d(None), help="kubeconfig context to use")
    parser.add_argument(
        "-n",
        "--namespace",
        default=d(None),
        help="namespace (default: the context's namespace, else 'default')",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=d(False), help="log client activity"
    )


@dataclass
class Verbs:
    """Where command groups add their commands."""

    top: Subparsers
    get: Subparsers
    set: Subparsers
    run: Subparsers
    terminate: Subparsers
    history: Subparsers
    common: argparse.ArgumentParser

    def command(
        self,
        group: Subparsers,
        name: str,
        help_: str,
        handler: str,
        *,
        aliases: tuple[str, ...] = (),
        offline: bool = False,
        epilog: str | None = None,
    ) -> argparse.ArgumentParser:
        """A command; `handler` is `"module:function"`, imported when it runs."""
        p: argparse.ArgumentParser = group.add_parser(
            name,
            help=help_,
            description=help_,
            parents=[self.common],
            aliases=list(aliases),
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(handler=handler, offline=offline)
        return p


def output(parser: argparse.ArgumentParser, *, choices: tuple[str, ...] = OUTPUTS) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=choices,
        help="json|yaml: the objects; wide: more columns; name: kind/name per line",
    )


def all_namespaces(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-A", "--all-namespaces", action="store_true", help="every namespace (a NAMESPACE column)"
    )


def watch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-w", "--watch", action="store_true", help="re-render on every change")


def shown_by_name(parser: argparse.ArgumentParser) -> None:
    """One object, by name: NAME, `-w` and `-o json|yaml`."""
    parser.add_argument("name", metavar="NAME")
    watch(parser)
    output(parser, choices=("json", "yaml"))


def application(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--application",
        metavar="NAME",
        help="a system Cell: act on this application's Cell only (default: every one)",
    )


def build_parser(prog: str = "okra") -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    _globals(common, top=False)
    parser = argparse.ArgumentParser(
        prog=prog, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _globals(parser, top=True)
    top = parser.add_subparsers(title="commands", metavar="COMMAND")

    def verb(name: str, help_: str, metavar: str) -> Subparsers:
        p = top.add_parser(name, help=help_, description=help_)
        sub = p.add_subparsers(title="what", metavar=metavar)
        p.set_defaults(usage=p)
        return sub

    verbs = Verbs(
        top=top,
        get=verb("get", "show Cells, target groups, clusters, analysis runs", "KIND"),
        set=verb("set", "change a Cell", "FIELD"),
        run=verb("run", "run something once", "KIND"),
        terminate=verb("terminate", "stop something running", "KIND"),
        history=verb("history", "what past rollouts did, step by step", "KIND"),
        common=common,
    )
    for module in GROUPS:
        register: Callable[[Verbs], None] = importlib.import_module(module).register
        register(verbs)
    return parser


def resolve(handler: str) -> Callable[..., object]:
    """The function a `"module:function"` handler names."""
    module, _, name = handler.partition(":")
    fn: Callable[..., object] = getattr(importlib.import_module(module), name)
    return fn
