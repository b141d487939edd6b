"""The dashboard offers what applies now: each action a Cell, a system or one of its
applications offers is disabled where `okra` would refuse it or do nothing, with the CLI's
own words for why (`cli.actions.cell_actions`, `dashboard.systems`)."""

from __future__ import annotations

from typing import Any

import pytest

from okra_controllers.cli.actions import cell_actions
from okra_controllers.cli.dashboard import model, systems

pytestmark = pytest.mark.unit

STEPS = [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}]
ROLLING = {"stableVersion": "v1", "canaryVersion": "v2", "rolloutId": "r1", "phase": "Migrating"}


def cell(annotations: dict[str, str] | None = None, /, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "web", "namespace": "prod", "annotations": annotations or {}},
        "spec": {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/x/1/2",
                    "targetGroupSelector": {"matchLabels": {"role": "web"}},
                },
            },
            "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS}},
        },
        "status": status,
    }


def blocklist(*versions: str) -> dict[str, Any]:
    return {"spec": {"items": [{"version": v, "cause": "analysis failed"} for v in versions]}}


def test_a_completed_cell_offers_only_pause() -> None:
    why = cell_actions(cell(phase="Completed", health="Healthy", stableVersion="v2"), None)
    assert why["promote"] == why["promote-full"] == why["abort"]
    assert why["abort"] == "cell web has no rollout in progress (phase Completed, Healthy)"
    assert why["retry"] == (
        "nothing to retry (no rollout is aborted and no blocked version is newer than the "
        "stable version v2)"
    )


def test_at_a_pause_step_promote_and_abort_act() -> None:
    why = cell_actions(cell(currentStepIndex=1, **ROLLING), None)
    assert {a: w for a, w in why.items() if w is None} == {
        "promote": None,
        "promote-full": None,
        "abort": None,
    }
    assert why["retry"] is not None
    assert why["retry"].startswith("nothing to retry")


def test_at_a_weight_step_there_is_nothing_to_promote_but_promote_fully() -> None:
    why = cell_actions(cell(currentStepIndex=0, **ROLLING), None)
    assert why["promote"] is not None
    assert why["promote"].startswith("nothing to promote on cell web: the rollout of v2 is at")
    assert why["promote-full"] is None
    assert why["abort"] is None


def test_a_paused_cells_promote_resumes_it_even_with_nothing_to_promote() -> None:
    why = cell_actions(cell({"okra.mumo.co/pause": "true"}, currentStepIndex=0, **ROLLING), None)
    assert why["promote"] is None


def test_past_the_last_step_promote_says_it_completes_when_aws_shows_it() -> None:
    why = cell_actions(cell(currentStepIndex=3, **ROLLING), None)
    assert why["promote"] == (
        "the rollout of v2 on cell web is past its last step; it completes when AWS shows "
        "all traffic on v2"
    )


def test_an_aborted_rollout_offers_retry_and_says_it_is_aborted() -> None:
    aborted = cell({"okra.mumo.co/abort": "r1"}, currentStepIndex=1, **ROLLING)
    why = cell_actions(aborted, None)
    assert why["abort"] == "the rollout of v2 is already aborted (okra retry resumes)"
    assert why["promote"] == why["promote-full"]
    assert why["promote"] == "the rollout of v2 on cell web is aborted; okra retry web resumes it"
    assert why["retry"] is None


def test_retry_acts_on_a_blocked_version_newer_than_the_stable_one_only() -> None:
    failed = cell(phase="Failed", stableVersion="v1")
    assert cell_actions(failed, blocklist("v2"))["retry"] is None
    assert cell_actions(failed, blocklist("v0"))["retry"] == (
        "nothing to retry (no rollout is aborted and no blocked version is newer than the "
        "stable version v1)"
    )


def test_the_row_carries_the_actions_with_the_cells_blocklist() -> None:
    failed = cell(phase="Failed", stableVersion="v1")
    assert model.cell_row(failed, None, {}, blocklist("v2"))["actions"]["retry"] is None
    assert model.cell_row(failed, None, {})["actions"]["retry"] is not None


# -- systems -----------------------------------------------------------------------


def system(paused: bool = False, *, app_phase: str = "Syncing") -> dict[str, Any]:
    annotations = {"okra.mumo.co/pause": "true"} if paused else {}
    return {
        "metadata": {"name": "shop", "namespace": "prod", "annotations": annotations},
        "spec": {"clusters": [{"name": "a"}], "applications": [{"name": "web"}, {"name": "api"}]},
        "status": {
            "phase": "Progressing",
            "applications": [
                {"name": "web", "phase": app_phase, "cell": "shop-web"},
                {"name": "api", "phase": "Ready", "cell": "shop-api"},
            ],
        },
    }


def child(app: str, annotations: dict[str, str] | None = None, /, **status: Any) -> Any:
    c = cell(annotations, **status)
    c["metadata"]["name"] = f"shop-{app}"
    c["metadata"]["labels"] = {"okra.mumo.co/system": "shop", "okra.mumo.co/application": app}
    return c, model.cell_row(c, None, {}), None


def test_a_system_acts_where_one_application_acts_and_says_why_not_per_application() -> None:
    web = child("web", currentStepIndex=1, **ROLLING)
    api = child("api", phase="Completed", health="Healthy", stableVersion="v3")
    card = systems.system_row(system(), {"web": web, "api": api}, [])
    assert card["actions"]["promote"] is None  # web's pause ends
    assert card["actions"]["abort"] is None
    assert card["actions"]["retry"] == (
        "nothing to retry: web: nothing to retry (no rollout is aborted and no blocked version "
        "is newer than the stable version v1); api: nothing to retry (no rollout is aborted "
        "and no blocked version is newer than the stable version v3)"
    )
    by_app = {a["name"]: a["actions"] for a in card["applications"]}
    assert by_app["web"]["promote"] is None
    assert by_app["api"]["abort"] == (
        "cell shop-api has no rollout in progress (phase Completed, Healthy)"
    )


def test_a_paused_systems_promote_resumes_it_and_an_applications_promote_waits_for_it() -> None:
    web = child("web", currentStepIndex=0, **ROLLING)  # nothing to promote on web itself
    card = systems.system_row(system(paused=True), {"web": web}, [])
    assert card["actions"]["promote"] is None
    assert card["applications"][0]["actions"]["promote"] == (
        "system shop is paused and holds every application: okra resume shop"
    )


def test_a_rolled_back_application_cannot_be_retried_past_its_system() -> None:
    web = child("web", {"okra.mumo.co/abort": "r1"}, currentStepIndex=1, **ROLLING)
    card = systems.system_row(system(app_phase="Reverted"), {"web": web}, [])
    web_actions = card["applications"][0]["actions"]
    assert web_actions["retry"] is not None
    assert web_actions["retry"].startswith("system shop rolls application web back")
    assert card["actions"]["retry"] == f"nothing to retry: web: {web_actions['retry']}"


def test_an_application_without_a_cell_and_a_system_without_any_offer_nothing() -> None:
    card = systems.system_row(system(), {}, [])
    assert card["actions"] == {
        v: "system shop has no Cell for any application yet" for v in systems.VERBS
    }
    assert card["applications"][0]["actions"]["abort"] == "application web has no Cell yet"
