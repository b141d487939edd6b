"""The ProgressiveRollout's plan: a pure function from what was observed to what should be.

Input: the ProgressiveRollout (spec, status, operator requests), whether its ApplicationSet
exists and who else rolls it out, the ApplicationSet's Applications as Argo CD reports them
(with their cluster's Secret labels), the phases of the rollout's AnalysisRuns, and the time.
Output: the next status, the syncs to start, the AnalysisRuns to create or stop, the webhooks
to call, Events, and when to look again. No I/O, so every rule is tested directly:

- Target revision: the revision Argo CD last resolved for the ApplicationSet's source (the
  `status.sync.revision` of the most recently reconciled Application). A new one restarts the
  rollout at the first stage; one whose rollout failed is not started again.
- Stages run strictly in order: a stage starts only when every earlier one is Completed.
- A stage's clusters: those whose cluster Secret matches its selector, at most `maxClusters`,
  spread over `topologyKey` values; recorded in status so they stay the same on restart; a
  cluster added while the stage runs joins it, a removed one leaves it.
- In flight (syncing, baking or being verified) never more than `maxUnavailable`, and with a
  `topologyKey` never two of one topology value.
- A cluster is done only when Argo CD reports the operation okra started (recognised by the
  sync ID okra wrote into the operation's `info`) Succeeded at the target revision, and the
  Application is Synced at that revision and Healthy in a comparison made after the operation
  finished; then `bakeTime`, then its PerCluster webhooks. Stale Synced/Healthy status (an
  older revision, an older operation, a comparison from before the sync) never completes it.
- Requeue: a cluster matching the requeue selector is skipped and looked at again every
  `interval`; still matching at the `attempts`-th look fails the stage, naming it.
- After every cluster of the stage is done: the analysis (Failed/Error fails the stage,
  Inconclusive pauses until promoted), then PostStage webhooks; PreStage webhooks run before
  the stage syncs anything. A stage whose clusters were all already at the revision (okra
  synced none of them) has nothing to verify and completes without its analysis.
- A cluster whose sync Argo CD started but that is not done within `progressDeadlineSeconds`
  fails the stage. A sync Argo CD has not picked up, or an unreachable cluster, only stalls
  (condition Stalled) and resumes by itself.
- Argo CD projects: a cluster its Application's AppProject does not permit (destinations) is
  never synced and is reported (Forbidden); one whose project's sync windows refuse a manual
  sync now waits in its stage while the others go on (`projects`).
- Failure: `Pause` holds everything (phase Failed) until `okra resume` retries the stage or a
  new revision arrives; `Rollback` syncs every cluster this rollout updated back to its
  previous revision, the most recently updated first, one at a time.

One module per phase, each saying its one job: `model` (what the plan reads and returns),
`members` (limits, selectors, a stage's clusters), `appproject` (Argo CD's project rules),
`projects` (a cluster's AppProject: destinations, sync windows), `draft` (the plan being
made, shared by the phases), `requests` (promote, abort, retry), `revision` (a new revision
restarts), `stages` (the stages in order), `clusters` (one cluster: wait, sync, bake, verify;
starting syncs), `verify` (analysis and webhooks), `failure` (pause or roll back), `compose`
(`plan`, and the report), `deletion` (what deleting the rollout cancels and waits for).
"""

from okra_controllers.api.v1alpha1.progressiverollout import WebhookResult
from okra_controllers.progressiverollout.plan.appproject import Project, parse_project
from okra_controllers.progressiverollout.plan.compose import plan
from okra_controllers.progressiverollout.plan.deletion import (
    Deletion,
    plan_deletion,
    waiting_message,
)
from okra_controllers.progressiverollout.plan.draft import set_condition
from okra_controllers.progressiverollout.plan.failure import rollback_order
from okra_controllers.progressiverollout.plan.members import (
    max_clusters,
    max_unavailable,
    scaled,
    select_members,
    target_revision,
)
from okra_controllers.progressiverollout.plan.model import (
    POLL,
    App,
    Event,
    Observed,
    Plan,
    Requests,
    RunRequest,
    Sync,
    WebhookCall,
)
from okra_controllers.progressiverollout.plan.verify import run_name

__all__ = [
    "POLL",
    "App",
    "Deletion",
    "Event",
    "Observed",
    "Plan",
    "Project",
    "Requests",
    "RunRequest",
    "Sync",
    "WebhookCall",
    "WebhookResult",
    "max_clusters",
    "max_unavailable",
    "parse_project",
    "plan",
    "plan_deletion",
    "rollback_order",
    "run_name",
    "scaled",
    "select_members",
    "set_condition",
    "target_revision",
    "waiting_message",
]
