"""How a Cell rolls out: its update strategy (Argo Rollouts' canary and blue-green steps,
with their analyses) and its checks (prechecks and postchecks)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from okra_controllers.api.v1alpha1.analysis import Argument
from okra_controllers.api.v1alpha1.common import ApiModel


class VersionedBy(ApiModel):
    label: str


class AnalysisTemplateRef(ApiModel):
    template_name: str
    cluster_scope: bool = False


class StepAnalysis(ApiModel):
    templates: list[AnalysisTemplateRef] = Field(min_length=1, max_length=10)
    args: list[Argument] | None = None


class BackgroundAnalysis(StepAnalysis):
    starting_step: int | None = Field(default=None, ge=0)


class PauseStep(ApiModel):
    duration: str | int | None = None
    """A duration (`10m`, `30s`) or seconds; none means until promoted."""


class ExperimentAnalysis(ApiModel):
    name: str = ""
    template_name: str = Field(min_length=1)
    cluster_scope: bool = False
    args: list[Argument] | None = None
    required_for_completion: bool = False


class ExperimentStep(ApiModel):
    """Argo Rollouts' experiment step, as the original okra accepts it: okra runs its
    `analyses` as one analysis step; `templates` (ReplicaSets) and `duration` have no
    meaning for clusters."""

    templates: list[dict[str, Any]] = Field(default_factory=list)
    duration: str | int | None = None
    analyses: list[ExperimentAnalysis] = Field(default_factory=list, max_length=10)


class SetCanaryScale(ApiModel):
    """Argo Rollouts' pod scaling step: changes nothing for clusters."""

    weight: int | None = None
    replicas: int | None = None
    match_traffic_weight: bool = False


class CanaryStep(ApiModel):
    """Exactly one of the step kinds. `experiment` and `setCanaryScale` (Argo Rollouts'
    kinds the original okra accepts) are read as an analysis step and as a step that
    changes nothing (`spelling`)."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.setWeight) ? 1 : 0) + (has(self.stepWeight) ? 1 : 0) + "
                    "(has(self.pause) ? 1 : 0) + (has(self.analysis) ? 1 : 0) + "
                    "(has(self.experiment) ? 1 : 0) + (has(self.setCanaryScale) ? 1 : 0) == 1",
                    "message": "a step has exactly one of setWeight, stepWeight, pause, analysis "
                    "(or, as the original okra, experiment or setCanaryScale)",
                }
            ]
        }
    }
    set_weight: int | None = Field(default=None, ge=0, le=100)
    step_weight: int | None = Field(default=None, ge=0, le=100)
    pause: PauseStep | None = None
    analysis: StepAnalysis | None = None
    experiment: ExperimentStep | None = None
    set_canary_scale: SetCanaryScale | None = None


class CanaryStrategy(ApiModel):
    analysis: BackgroundAnalysis | None = None
    steps: list[CanaryStep] = Field(default_factory=list, max_length=64)


class PromoteStep(ApiModel):
    """`promote: {}`: all traffic to the new version at once. It takes no fields (one
    written is refused as unknown)."""


class BlueGreenStep(ApiModel):
    """Exactly one of: `analysis` (run against the new version, which has no traffic
    before `promote`, and wait for success) or `promote: {}` (all traffic to the new
    version at once). Steps after `promote` run with the new version serving; a failure
    there sends all traffic back to the old version."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.analysis) ? 1 : 0) + (has(self.promote) ? 1 : 0) == 1",
                    "message": "a blueGreen step has exactly one of analysis, promote",
                }
            ]
        }
    }
    analysis: StepAnalysis | None = None
    promote: PromoteStep | None = None


class BlueGreenStrategy(ApiModel):
    """The new version's target groups get a healthy target, then the steps run; after
    the last step (with or without an explicit `promote`) the new version serves 100%."""

    steps: list[BlueGreenStep] = Field(default_factory=list, max_length=64)


class UpdateStrategy(ApiModel):
    """`type` says which steps run: `canary` with Canary, `blueGreen` with BlueGreen; the
    other is refused rather than ignored."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.type) || self.type == 'Canary' || !has(self.canary)",
                    "message": "updateStrategy.canary is read only with type Canary: with "
                    "type BlueGreen write the steps under updateStrategy.blueGreen",
                },
                {
                    "rule": "(has(self.type) && self.type == 'BlueGreen') || !has(self.blueGreen)",
                    "message": "updateStrategy.blueGreen is read only with type BlueGreen: "
                    "set updateStrategy.type: BlueGreen, or write the steps under "
                    "updateStrategy.canary",
                },
            ]
        }
    }
    type: Literal["Canary", "BlueGreen"] = "Canary"
    canary: CanaryStrategy | None = None
    blue_green: BlueGreenStrategy | None = None


SHORTHAND = ("image", "command", "args", "env", "envFrom", "imagePullPolicy", "resources")
"""The fields of the one-container shorthand (`job.template.spec.image`, ...)."""


class CheckPodSpec(ApiModel):
    """What the check's Job runs (`job.template.spec`): a shorthand for one container
    (`image`, `command`, `args`, `env`, `envFrom`, `imagePullPolicy`, `resources`), or a
    Pod's spec as a Kubernetes Job writes it (`containers`, `initContainers`); either with
    the Pod's own fields (`serviceAccountName` for IRSA, `imagePullSecrets`, `volumes`,
    `nodeSelector`, `tolerations`, `restartPolicy`). Containers, volumes and the rest are
    Kubernetes' own types, checked by the API server when the Job is created (the Cell
    says what it refused)."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.image) != has(self.containers)",
                    "message": "job.template.spec takes image (one container: the "
                    "shorthand) or containers (a Pod's spec), exactly one of them",
                },
                {
                    "rule": "!has(self.containers) || !(has(self.command) || has(self.args) "
                    "|| has(self.env) || has(self.envFrom) || has(self.imagePullPolicy) || "
                    "has(self.resources))",
                    "message": "command, args, env, envFrom, imagePullPolicy and resources "
                    "belong to a container: with job.template.spec.containers, write them in "
                    "containers[]",
                },
            ]
        }
    }
    image: str | None = Field(default=None, min_length=1)
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[dict[str, Any]] | None = None
    env_from: list[dict[str, Any]] | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    resources: dict[str, Any] | None = None
    containers: list[dict[str, Any]] | None = Field(default=None, min_length=1)
    init_containers: list[dict[str, Any]] | None = None
    service_account_name: str | None = Field(default=None, min_length=1)
    image_pull_secrets: list[dict[str, Any]] | None = None
    volumes: list[dict[str, Any]] | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    restart_policy: Literal["Never", "OnFailure"] = "Never"
    """Never: a check that fails has failed. OnFailure restarts its containers in place
    (within the Job's `backoffLimit`)."""


class CheckTemplateMetadata(ApiModel):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    """Added to the Pod's (okra's own labels win)."""


class CheckJobTemplate(ApiModel):
    metadata: CheckTemplateMetadata | None = None
    spec: CheckPodSpec


class CheckJob(ApiModel):
    template: CheckJobTemplate
    active_deadline_seconds: int | None = Field(default=None, ge=1)
    """The Job's activeDeadlineSeconds: a check that runs longer fails."""
    backoff_limit: int = Field(default=0, ge=0, le=10)
    """The Job's backoffLimit: Pods that may fail before the check has (default 0: one run)."""
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)
    """The Job's ttlSecondsAfterFinished: the finished Job (and its Pod's log) goes this long
    after; okra keeps its result in the Cell's status."""


class RolloutCheck(ApiModel):
    """A precheck (before any traffic moves to the new version) or a postcheck (after it
    serves 100%): a Kubernetes Job the Cell owns (exit 0 passes), or an analysis (an
    AnalysisRun, Successful passes), one per rollout and check. Anything else fails the
    rollout (precheck: the new version is blocked and never gets traffic; postcheck: all
    traffic returns to the old version)."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.job) ? 1 : 0) + (has(self.analysis) ? 1 : 0) == 1",
                    "message": "a check has exactly one of job, analysis",
                }
            ]
        }
    }
    name: str = Field(min_length=1, max_length=20, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    job: CheckJob | None = None
    analysis: StepAnalysis | None = None
