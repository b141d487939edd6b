"""ProgressiveRollout commands: get progressiverollout, history progressiverollout, resume.
`okra promote|pause|abort NAME` (registered with the Cell commands) act on the
ProgressiveRollout NAME when no Cell has that name."""

from __future__ import annotations

from okra_controllers.cli.parser import Verbs, application, output, shown_by_name

H = "okra_controllers.cli.progressive"


def register(v: Verbs) -> None:
    p = v.command(
        v.get,
        "progressiverollout",
        "a ProgressiveRollout: stages, clusters, revisions, health, bake time, analysis",
        f"{H}:cmd_get_progressiverollout",
        aliases=("progressiverollouts", "prollout"),
    )
    shown_by_name(p)

    p = v.command(
        v.history,
        "progressiverollout",
        "a ProgressiveRollout's past rollouts (status.history): a table of revisions; with "
        "REVISION, its stages and clusters in time order",
        "okra_controllers.cli.history:cmd_history_rollout",
        aliases=("progressiverollouts", "prollout"),
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("revision", metavar="REVISION", nargs="?", help="a revision (a prefix will do)")
    output(p, choices=("json", "yaml"))

    p = v.command(
        v.top,
        "resume",
        "resume a Cell (a system: and its applications) or a ProgressiveRollout paused by "
        "okra pause; a ProgressiveRollout after a failure or abort retries the failed stage",
        f"{H}:cmd_resume_any",
    )
    p.add_argument("cell", metavar="NAME")
    application(p)
