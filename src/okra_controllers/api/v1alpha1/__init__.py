"""okra.mumo.co/v1alpha1 API types (pydantic models; CRDs are generated from them)."""

from okra_controllers.api.v1alpha1.analysis import ANALYSIS_MODELS
from okra_controllers.api.v1alpha1.cell import CELL_MODELS
from okra_controllers.api.v1alpha1.clusterset import CLUSTERSET_MODELS
from okra_controllers.api.v1alpha1.freeze import FREEZE_MODELS
from okra_controllers.api.v1alpha1.progressiverollout import PROGRESSIVEROLLOUT_MODELS
from okra_controllers.api.v1alpha1.route53 import ROUTE53_MODELS
from okra_controllers.api.v1alpha1.targetgroupbinding import TARGETGROUPBINDING_MODELS
from okra_controllers.api.v1alpha1.targetgroupset import TARGETGROUPSET_MODELS

CRD_MODELS = (
    *ANALYSIS_MODELS,
    *CELL_MODELS,
    *ROUTE53_MODELS,
    *CLUSTERSET_MODELS,
    *TARGETGROUPSET_MODELS,
    *TARGETGROUPBINDING_MODELS,
    *PROGRESSIVEROLLOUT_MODELS,
    *FREEZE_MODELS,
)
"""Every kind okra serves; `make manifests` writes their CRDs to config/crd/bases."""

__all__ = ["CRD_MODELS"]
