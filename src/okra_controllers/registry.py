"""The controllers okra-manager can run, by the name `--controllers` takes.

The manager looks controllers up here; each controller package exports one `setup(mgr,
settings)`. Nothing here imports the manager, and no controller imports this module.
"""

from __future__ import annotations

from okra_controllers.albconfig.controller import setup as setup_albconfigs
from okra_controllers.analysis.check_controller import setup as setup_checks
from okra_controllers.analysis.run_controller import setup as setup_analysisruns
from okra_controllers.api.kinds import APPLICATION, JOB, SECRET
from okra_controllers.cell.controller import setup as setup_cells
from okra_controllers.cell.pause_controller import setup as setup_pauses
from okra_controllers.cell.system.controller import setup as setup_system_cells
from okra_controllers.clusterset.controller import setup as setup_clustersets
from okra_controllers.clusterset.plan import SECRET_TYPE_LABEL
from okra_controllers.nlbconfig.controller import setup as setup_nlbconfigs
from okra_controllers.progressiverollout.controller import setup as setup_progressiverollouts
from okra_controllers.route53config.controller import setup as setup_route53configs
from okra_controllers.settings import Setup
from okra_controllers.targetgroupbinding.controller import setup as setup_targetgroupbindings
from okra_controllers.targetgroupset.controller import setup as setup_targetgroupsets
from okra_runtime.gvk import GVK

CONTROLLERS: dict[str, Setup] = {
    "albconfig": setup_albconfigs,
    "nlbconfig": setup_nlbconfigs,
    "route53config": setup_route53configs,
    "analysisrun": setup_analysisruns,
    "check": setup_checks,
    "cell": setup_cells,
    "systemcell": setup_system_cells,
    "clusterset": setup_clustersets,
    "targetgroupset": setup_targetgroupsets,
    "targetgroupbinding": setup_targetgroupbindings,
    "pause": setup_pauses,
    "progressiverollout": setup_progressiverollouts,
}


REQUIRED_KINDS: dict[str, GVK] = {"progressiverollout": APPLICATION}
"""Kinds a controller watches that okra does not install: without them it stays off (its
informer would never sync and hold every controller back)."""


CACHE_SELECTORS: dict[GVK, str] = {
    SECRET: f"{SECRET_TYPE_LABEL}=cluster",  # Argo CD cluster Secrets only
    JOB: "okra.mumo.co/cell",  # the Cells' check Jobs (cell.checkjobs.check_job)
}
"""The manager caches only the Secrets and Jobs okra reads: every reader of the Secret
informer wants Argo CD cluster Secrets, and the Cell controller only its own Jobs."""
