"""Plain-text views of Cells, target groups and clusters, as pure functions.

Everything here takes API objects (raw dicts, as the server returns them) and
the current time, and returns text: no I/O, so each view is unit-tested with
hand-written objects. Colour (ANSI) is opt-in; the CLI turns it on only when
stdout is a terminal.

Step numbers are shown from 1 (`step 2/4` is the second step), as the Cell's
own status messages count them.

One module per view: `common` (colour, tables, ages, steps), `cell_view` (one Cell),
`tables` (the list views), `runs` (AnalysisRuns).
"""

from okra_controllers.cli.render.cell_view import read_age, render_cell
from okra_controllers.cli.render.common import (
    CURRENT,
    DONE,
    MAX_MEASUREMENTS,
    MAX_RUNS,
    PENDING,
    Col,
    Paint,
    age,
    describe_step,
    duration,
    held_by,
    pause_seconds,
    step_label,
    table,
)
from okra_controllers.cli.render.runs import render_analysis_run, render_analysis_runs
from okra_controllers.cli.render.tables import (
    ARGOCD_SECRET_TYPE,
    cell_row,
    cluster_rows,
    render_cells,
    render_clusters,
    render_target_groups,
    target_group_rows,
)
from okra_controllers.cli.view import Obj, cell_selector

__all__ = [
    "ARGOCD_SECRET_TYPE",
    "CURRENT",
    "DONE",
    "MAX_MEASUREMENTS",
    "MAX_RUNS",
    "PENDING",
    "Col",
    "Obj",
    "Paint",
    "age",
    "cell_row",
    "cell_selector",
    "cluster_rows",
    "describe_step",
    "duration",
    "held_by",
    "pause_seconds",
    "read_age",
    "render_analysis_run",
    "render_analysis_runs",
    "render_cell",
    "render_cells",
    "render_clusters",
    "render_target_groups",
    "step_label",
    "table",
    "target_group_rows",
]
