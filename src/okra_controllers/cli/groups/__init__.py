"""Command groups: one module per resource, each with `register(verbs)`.

To add commands for a new resource (say ProgressiveRollout): write
`groups/progressiverollout.py` with a `register(v: Verbs)` that adds, e.g.,
`v.command(v.get, "progressiverollout", "...", "okra_controllers.cli.progressive:cmd_get",
aliases=("progressiverollouts", "pr"))`, put the handlers in their own module
(imported only when the command runs), and list the group in
`okra_controllers.cli.parser.GROUPS`. Keep this module and the group modules
free of heavy imports: they are imported for every `okra` invocation.
"""
