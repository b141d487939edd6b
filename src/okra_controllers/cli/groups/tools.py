"""Commands that need no cluster (lint, completion, demo) and version."""

from __future__ import annotations

import argparse

from okra_controllers.cli.parser import Verbs


def register(v: Verbs) -> None:
    p = v.command(
        v.top,
        "lint",
        "check Cells, load balancer configs and AnalysisTemplates offline: schema, "
        "validation rules, conditions, ALB limits, template arguments",
        "okra_controllers.cli.lint:cmd_lint",
        offline=True,
        epilog="exit codes: 0 no errors, 1 errors (printed as FILE:LINE: KIND/NAME: message)",
    )
    p.add_argument("files", metavar="FILE", nargs="+", help="YAML files ('-' reads stdin)")

    p = v.command(
        v.top,
        "version",
        "the CLI's version and, when the cluster is reachable, the manager's",
        "okra_controllers.cli.version:cmd_version",
        offline=True,
    )
    p.add_argument("--client", action="store_true", help="only the CLI's version")
    p.add_argument("-o", "--output", choices=("json", "yaml"))

    p = v.command(
        v.top,
        "completion",
        "print a shell completion script: source <(okra completion bash)",
        "okra_controllers.cli.completion:cmd_completion",
        offline=True,
    )
    p.add_argument("shell", choices=("bash", "zsh", "fish"))

    p = v.top.add_parser("demo", help="run the local demo (control plane, AWS emulator, a rollout)")
    p.add_argument("demo_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(demo=True)
