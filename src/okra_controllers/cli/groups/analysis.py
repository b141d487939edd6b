"""Analysis commands: run analysis, get analysisrun(s), terminate analysisrun."""

from __future__ import annotations

from okra_controllers.cli.parser import Verbs, all_namespaces, output, shown_by_name

H = "okra_controllers.cli.analysis"


def register(v: Verbs) -> None:
    p = v.command(
        v.run, "analysis", "create an AnalysisRun from templates", f"{H}:cmd_run_analysis"
    )
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

    p = v.command(
        v.get,
        "analysisrun",
        "an AnalysisRun: phase, each metric's measurements (with -w: live)",
        f"{H}:cmd_get_analysisrun",
        aliases=("okar",),
    )
    shown_by_name(p)

    p = v.command(
        v.get,
        "analysisruns",
        "AnalysisRuns: phase, cell, rollout, age",
        f"{H}:cmd_get_analysisruns",
    )
    p.add_argument("--cell", metavar="NAME", help="only this Cell's runs")
    all_namespaces(p)
    output(p)

    p = v.command(
        v.terminate,
        "analysisrun",
        "stop an AnalysisRun: measurements in flight finish, no new ones start",
        f"{H}:cmd_terminate_analysisrun",
        aliases=("okar",),
    )
    p.add_argument("name", metavar="NAME")
