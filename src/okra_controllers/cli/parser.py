"""The command line: `okra <command> ...`. Global flags (`--kubeconfig`,
`--context`, `-n`, `-v`) are accepted before the command and after it."""

from __future__ import annotations

import argparse

from okra_controllers.cli import progressive
from okra_controllers.cli.analysis import cmd_run_analysis
from okra_controllers.cli.commands import cmd_abort, cmd_promote, cmd_retry, cmd_set_version
from okra_controllers.cli.get import (
    cmd_get_cell,
    cmd_get_cells,
    cmd_get_clusters,
    cmd_get_target_groups,
)

DESCRIPTION = """\
Operate okra: inspect Cells and their target groups, move a rollout along
(promote, abort, retry), pin a version, run an analysis.

examples:
  okra get cells
  okra get cell web --watch
  okra get clusters -n argocd
  okra promote web            # end the current pause / accept an inconclusive analysis
  okra promote web --full     # skip every remaining step
  okra abort web              # all traffic back to stable, hold
  okra retry web              # resume: unblock failed versions, remove the abort
  okra set version web v1.4.2
  okra run analysis --template success-rate --arg service=web --wait
  okra get progressiverollout web --watch
  okra pause web / okra resume web     # a ProgressiveRollout: hold new syncs / go on (retry)
"""


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


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=("yaml", "json"), help="print objects instead of the view"
    )


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    _globals(common, top=False)
    parser = argparse.ArgumentParser(
        prog="okra", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _globals(parser, top=True)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(
        group: argparse._SubParsersAction[argparse.ArgumentParser],
        name: str,
        help_: str,
        **kw: object,
    ) -> argparse.ArgumentParser:
        return group.add_parser(name, help=help_, description=help_, parents=[common], **kw)  # type: ignore[arg-type]

    get = commands.add_parser("get", help="show Cells, target groups and clusters")
    what = get.add_subparsers(title="what", metavar="KIND")
    p = command(what, "cell", "a Cell's rollout: versions, weights, steps, analyses, blocklist")
    p.add_argument("name", metavar="NAME")
    p.add_argument("-w", "--watch", action="store_true", help="re-render on every change")
    _output(p)
    p.set_defaults(handler=cmd_get_cell)
    p = command(what, "cells", "every Cell in the namespace", aliases=["cl"])
    _output(p)
    p.set_defaults(handler=cmd_get_cells)
    p = command(
        what,
        "targetgroups",
        "AWSTargetGroups with their versions and weights",
        aliases=["targetgroup", "tg", "tgs"],
    )
    p.add_argument("--cell", metavar="NAME", help="only the target groups this Cell selects")
    _output(p)
    p.set_defaults(handler=cmd_get_target_groups)
    p = command(
        what,
        "clusters",
        "Argo CD cluster Secrets: cluster, server, labels, owning ClusterSet",
        aliases=["cluster"],
    )
    _output(p)
    p.set_defaults(handler=cmd_get_clusters)
    progressive.register(commands, what, command, _output)
    get.set_defaults(usage=get)

    p = command(
        commands,
        "promote",
        "end the current pause (or accept an inconclusive analysis) of a Cell's rollout",
    )
    p.add_argument("cell", metavar="CELL")
    p.add_argument("--full", action="store_true", help="skip every remaining step: canary to 100%%")
    p.set_defaults(handler=progressive.or_rollout(cmd_promote, progressive.promote_rollout))

    p = command(commands, "abort", "send all traffic back to the stable version and hold")
    p.add_argument("cell", metavar="CELL")
    p.set_defaults(handler=progressive.or_rollout(cmd_abort, progressive.abort_rollout))

    p = command(
        commands,
        "retry",
        "resume after abort or failure: remove the abort, unblock VERSION "
        "(default: every blocked version newer than the stable one)",
    )
    p.add_argument("cell", metavar="CELL")
    p.add_argument("version", metavar="VERSION", nargs="?")
    p.set_defaults(handler=cmd_retry)

    set_ = commands.add_parser("set", help="change a Cell")
    set_what = set_.add_subparsers(title="what", metavar="FIELD")
    p = command(set_what, "version", "pin (or, lower, roll back to) a version: spec.version")
    p.add_argument("cell", metavar="CELL")
    p.add_argument("version", metavar="VERSION", nargs="?")
    p.add_argument("--clear", action="store_true", help="remove spec.version: newest wins again")
    p.set_defaults(handler=cmd_set_version)
    set_.set_defaults(usage=set_)

    run = commands.add_parser("run", help="run something once")
    run_what = run.add_subparsers(title="what", metavar="KIND")
    p = command(run_what, "analysis", "create an AnalysisRun from templates")
    p.add_argument(
        "--template",
        action="append",
        required=True,
        metavar="NAME",
        help="AnalysisTemplate name (repeat to combine templates)",
    )
    p.add_argument(
        "--cluster-template",
        action="store_true",
        help="the templates are ClusterAnalysisTemplates",
    )
    p.add_argument("--arg", action="append", metavar="NAME=VALUE", help="a template argument")
    p.add_argument("--name", help="the run's name (default: generated from the template's)")
    p.add_argument(
        "--wait",
        action="store_true",
        help="follow the run; exit 0 if Successful, 1 otherwise",
    )
    p.set_defaults(handler=cmd_run_analysis)
    run.set_defaults(usage=run)

    p = command(commands, "demo", "run the local demo (control plane, AWS emulator, a rollout)")
    p.add_argument("demo_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(demo=True)
    return parser
