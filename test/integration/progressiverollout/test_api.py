"""The ProgressiveRollout CRD on a real kube-apiserver: the original controller's example is
accepted with only its group changed; what the schema can refuse is refused with a message
naming the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from okra_controllers.api.v1alpha1.progressiverollout import ProgressiveRollout
from okra_runtime.client import Client
from okra_runtime.errors import InvalidError
from okra_testkit.envtest import ControlPlane

REPO = Path(__file__).resolve().parents[3]
SEED_EXAMPLE = """
apiVersion: deployment.skyscanner.net/v1alpha1
kind: ProgressiveRollout
metadata:
  name: progressiverollout-sample
  namespace: argocd
spec:
  # the object owning the target applications
  sourceRef:
    apiGroup: argoproj.io/v1alpha1
    kind: ApplicationSet
    name: my-app-set
  # the rollout steps
  stages:
    - name: canary in EMEA
      # how many clusters to update in parallel
      maxUnavailable: 2
      # how many cluster to update from the clusters selector result
      maxClusters: 2
      # which clusters to update
      clusters:
        selector:
          matchLabels:
            area: emea
      # how to group the the clusters selector result
      topologyKey: region
      # which clusters to requeue
      requeue:
        selector:
          matchLabels:
            drained: "true"
        # how many times to reueue a cluster before failing the rollout
        attempts: 5
        # how often to try to update a reueued cluster
        interval: 30m
    - name: eu-west-1
      maxUnavailable: 25%
      maxClusters: 100%
      clusters:
        selector:
          matchLabels:
            region: eu-west-1
      requeue:
        selector:
          matchLabels:
            drained: "true"
        attempts: 5
        interval: 30m
    - name: eu-central-1
      maxUnavailable: 25%
      maxClusters: 100%
      clusters:
        selector:
          matchLabels:
            region: eu-central-1
      requeue:
        selector:
          matchLabels:
            drained: "true"
        attempts: 5
        interval: 30m
"""


def seed_example(namespace: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(SEED_EXAMPLE)
    obj["apiVersion"] = "okra.mumo.co/v1alpha1"  # the only change
    obj["metadata"]["namespace"] = namespace
    return obj


@pytest.fixture
def crds(control_plane: ControlPlane) -> None:
    control_plane.install_crds([REPO / "config/crd/bases/okra.mumo.co_progressiverollouts.yaml"])


async def test_the_seed_example_is_accepted_unchanged_apart_from_the_group(
    crds: None, rt_client: Client, namespace: str
) -> None:
    created = await rt_client.create(seed_example(namespace))
    pr = ProgressiveRollout.model_validate(created)
    assert [s.name for s in pr.spec.stages] == ["canary in EMEA", "eu-west-1", "eu-central-1"]
    assert pr.spec.stages[0].max_unavailable == 2
    assert pr.spec.stages[1].max_unavailable == "25%"
    assert pr.spec.stages[0].topology_key == "region"
    assert pr.spec.stages[0].requeue is not None
    assert pr.spec.stages[0].requeue.attempts == 5
    # Defaults published in the schema are filled in by the server.
    assert created["spec"]["failurePolicy"] == "Pause"
    assert created["spec"]["progressDeadlineSeconds"] == 600


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda o: o["spec"]["stages"][1].update(maxUnavailable="150%"), "maxUnavailable", "%"),
        (lambda o: o["spec"]["stages"][1].update(maxClusters="101%"), "maxClusters", "%"),
        (lambda o: o["spec"]["stages"][0].update(maxClusters=0), "maxClusters", "1"),
        (lambda o: o["spec"]["stages"][0].update(maxUnavailable="two"), "maxUnavailable", "%"),
        (lambda o: o["spec"]["stages"][1].update(name="canary in EMEA"), "spec", "unique"),
        (lambda o: o["spec"].update(stages=[]), "stages", "1"),
        (lambda o: o["spec"]["sourceRef"].update(kind="Application"), "kind", "ApplicationSet"),
        (lambda o: o["spec"].update(failurePolicy="Retry"), "failurePolicy", "Rollback"),
        (
            lambda o: o["spec"]["stages"][0].update(bakeTime="ten minutes"),
            "bakeTime",
            "should match",
        ),
        (
            lambda o: o["spec"]["stages"][0]["requeue"].update(interval="soon"),
            "interval",
            "should match",
        ),
        (
            lambda o: o["spec"]["stages"][0].update(webhooks=[{"name": "smoke", "url": "ftp://x"}]),
            "url",
            "should match",
        ),
        (
            lambda o: o["spec"]["stages"][0].update(requeue={"attempts": 3}),
            "requeue.selector",
            "remove requeue",
        ),
        (
            lambda o: o["spec"]["stages"][0]["clusters"]["selector"].update(
                matchExpressions=[{"key": "tier", "operator": "In"}]
            ),
            "matchExpressions",
            "need values",
        ),
        (
            lambda o: o["spec"]["stages"][0]["clusters"]["selector"].update(
                matchExpressions=[{"key": "tier", "operator": "Exists", "values": ["a"]}]
            ),
            "matchExpressions",
            "remove values",
        ),
    ],
)
async def test_bad_input_is_refused_naming_the_field(
    crds: None, rt_client: Client, namespace: str, edit: Any, field: str, message: str
) -> None:
    obj = copy.deepcopy(seed_example(namespace))
    edit(obj)
    with pytest.raises(InvalidError) as err:
        await rt_client.create(obj)
    text = str(err.value)
    assert field in text, text
    assert message in text, text
