"""`python -m okra_controllers.cli`: the same as the `okra` command."""

from okra_controllers.cli import main

raise SystemExit(main())
