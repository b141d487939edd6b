"""Every kind okra reads or writes, by one name each: the one place kind names are spelled.

okra's own kinds are built from their models' metadata (`__crd__`: group, version, kind), so a
name cannot drift from the CRD it stands for. Kinds okra does not serve (Kubernetes', Argo
CD's and Argo Rollouts', the AWS Load Balancer Controller's) are spelled here once. A
controller imports its kinds from here; `make lint` (hack/check-kinds.py) fails on a `GVK`
with a kind spelled anywhere else in okra_controllers, and on one of these kinds compared or
keyed as a bare string outside api/ (`obj["kind"] == "Cell"`: write `CELL.kind`).

Two kinds are called TargetGroupBinding: okra's `AWS_TARGET_GROUP_BINDING`
(okra.mumo.co, the AWSTargetGroupBinding controller registers targets itself) and the AWS Load
Balancer Controller's `LBC_TARGET_GROUP_BINDING` (elbv2.k8s.aws, which an AWSTargetGroupSet or
a system Cell writes for the LBC to act on). Neither is ever named plain TARGET_GROUP_BINDING.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.analysis import (
    AnalysisRun,
    AnalysisTemplate,
    Check,
    ClusterAnalysisTemplate,
)
from okra_controllers.api.v1alpha1.cell import (
    AWSApplicationLoadBalancerConfig,
    AWSNetworkLoadBalancerConfig,
    AWSTargetGroup,
    Cell,
    Pause,
    VersionBlocklist,
)
from okra_controllers.api.v1alpha1.clusterset import ClusterSet
from okra_controllers.api.v1alpha1.freeze import ClusterFreeze, Freeze
from okra_controllers.api.v1alpha1.progressiverollout import ProgressiveRollout
from okra_controllers.api.v1alpha1.route53 import AWSRoute53RecordSetConfig
from okra_controllers.api.v1alpha1.targetgroupbinding import AWSTargetGroupBinding
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSet
from okra_runtime.crdgen import CRDInfo
from okra_runtime.events import EVENT
from okra_runtime.gvk import GVK


def gvk_of(model: type) -> GVK:
    """The group, version and kind an okra API model declares in its `__crd__`."""
    info: CRDInfo = model.__crd__  # type: ignore[attr-defined]
    return GVK(info.group, info.version, info.kind)


# okra's kinds (okra.mumo.co)
CELL = gvk_of(Cell)
ALB_CONFIG = gvk_of(AWSApplicationLoadBalancerConfig)
NLB_CONFIG = gvk_of(AWSNetworkLoadBalancerConfig)
ROUTE53_CONFIG = gvk_of(AWSRoute53RecordSetConfig)
TARGET_GROUP = gvk_of(AWSTargetGroup)
TARGET_GROUP_SET = gvk_of(AWSTargetGroupSet)
AWS_TARGET_GROUP_BINDING = gvk_of(AWSTargetGroupBinding)
BLOCKLIST = gvk_of(VersionBlocklist)
PAUSE = gvk_of(Pause)
CHECK = gvk_of(Check)
ANALYSIS_RUN = gvk_of(AnalysisRun)
ANALYSIS_TEMPLATE = gvk_of(AnalysisTemplate)
CLUSTER_ANALYSIS_TEMPLATE = gvk_of(ClusterAnalysisTemplate)
CLUSTERSET = gvk_of(ClusterSet)
PROGRESSIVE_ROLLOUT = gvk_of(ProgressiveRollout)
FREEZE = gvk_of(Freeze)
CLUSTER_FREEZE = gvk_of(ClusterFreeze)

# Kubernetes' kinds
SECRET = GVK("", "v1", "Secret")
CONFIGMAP = GVK("", "v1", "ConfigMap")
NODE = GVK("", "v1", "Node")
POD = GVK("", "v1", "Pod")
NAMESPACE = GVK("", "v1", "Namespace")
JOB = GVK("batch", "v1", "Job")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
ADMISSION_POLICY = GVK("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy")
ADMISSION_POLICY_BINDING = GVK(
    "admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"
)
SELF_SUBJECT_REVIEW = GVK("authentication.k8s.io", "v1", "SelfSubjectReview")

# Argo CD's and Argo Rollouts' kinds (argoproj.io)
ARGO_GROUP = "argoproj.io"
APPLICATION = GVK(ARGO_GROUP, "v1alpha1", "Application")
APPLICATION_SET = GVK(ARGO_GROUP, "v1alpha1", "ApplicationSet")
APP_PROJECT = GVK(ARGO_GROUP, "v1alpha1", "AppProject")
ARGO_ANALYSIS_TEMPLATE = GVK(ARGO_GROUP, "v1alpha1", "AnalysisTemplate")
ARGO_CLUSTER_ANALYSIS_TEMPLATE = GVK(ARGO_GROUP, "v1alpha1", "ClusterAnalysisTemplate")

# The AWS Load Balancer Controller's kind (elbv2.k8s.aws): not okra's AWSTargetGroupBinding
LBC_TARGET_GROUP_BINDING = GVK("elbv2.k8s.aws", "v1beta1", "TargetGroupBinding")

__all__ = [
    "ADMISSION_POLICY",
    "ADMISSION_POLICY_BINDING",
    "ALB_CONFIG",
    "ANALYSIS_RUN",
    "ANALYSIS_TEMPLATE",
    "APPLICATION",
    "APPLICATION_SET",
    "APP_PROJECT",
    "ARGO_ANALYSIS_TEMPLATE",
    "ARGO_CLUSTER_ANALYSIS_TEMPLATE",
    "ARGO_GROUP",
    "AWS_TARGET_GROUP_BINDING",
    "BLOCKLIST",
    "CELL",
    "CHECK",
    "CLUSTERSET",
    "CLUSTER_ANALYSIS_TEMPLATE",
    "CLUSTER_FREEZE",
    "CONFIGMAP",
    "DEPLOYMENT",
    "EVENT",
    "FREEZE",
    "JOB",
    "LBC_TARGET_GROUP_BINDING",
    "NAMESPACE",
    "NLB_CONFIG",
    "NODE",
    "PAUSE",
    "POD",
    "PROGRESSIVE_ROLLOUT",
    "ROUTE53_CONFIG",
    "SECRET",
    "SELF_SUBJECT_REVIEW",
    "TARGET_GROUP",
    "TARGET_GROUP_SET",
    "gvk_of",
]
