"""Which triggers a reconcile fires, from the status before and after and the events."""

from __future__ import annotations

from typing import Any

from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.notifications.notifier import body, fields_for
from okra_controllers.notifications.triggers import Fired, subscriptions, triggers, wanted


def st(**kw: object) -> CellStatus:
    return CellStatus.model_validate(kw)


def names(fired: list[Fired]) -> list[str]:
    return [f.trigger for f in fired]


def test_events_map_to_triggers() -> None:
    events = [("RolloutStarted", "canary v2"), ("Switched", "x"), ("RolloutFailed", "v2 failed")]
    assert names(triggers(st(), st(), events)) == ["on-rollout-started", "on-rollout-failed"]


def test_steps_completed_in_one_pass_each_fire_once() -> None:
    before = st(rolloutId="r", currentStepIndex=1, health="Progressing")
    after = st(rolloutId="r", currentStepIndex=3, health="Progressing")
    fired = triggers(before, after, [])
    assert [(f.trigger, f.step) for f in fired] == [
        ("on-rollout-step-completed", 1),
        ("on-rollout-step-completed", 2),
    ]
    # A new rollout (another ID) starting at step 0 completes nothing of the old one.
    assert triggers(before, st(rolloutId="s", currentStepIndex=0), []) == []


def test_pauses_fire_on_entering_them_only() -> None:
    paused = st(rolloutId="r", health="Paused", pausedReason="Pause", message="paused at step 2")
    assert names(triggers(st(rolloutId="r", health="Progressing"), paused, [])) == [
        "on-rollout-paused"
    ]
    assert triggers(paused, paused, []) == []
    inconclusive = st(rolloutId="r", health="Paused", pausedReason="Inconclusive")
    assert names(triggers(paused, inconclusive, [])) == ["on-analysis-inconclusive"]


def test_subscriptions_and_bodies() -> None:
    subs = subscriptions(
        {
            "notifications.okra.mumo.co/subscribe.all.ci": "",
            "notifications.okra.mumo.co/subscribe.on-rollout-failed.team": "#deploys",
            "other": "x",
        }
    )
    failed = Fired("on-rollout-failed", "v2 failed")
    assert [s.service for s in wanted(subs, failed)] == ["ci", "team"]
    assert [s.service for s in wanted(subs, Fired("on-rollout-started", ""))] == ["ci"]
    fields = {
        "trigger": failed.trigger,
        "name": "web",
        "cell": "web",
        "namespace": "ns",
        "message": "v2 failed",
    }
    assert body("slack", {}, fields, subs[1].recipient) == (
        b'{"text": "[okra] ns/web: on-rollout-failed: v2 failed", "channel": "#deploys"}'
    )
    templated = body("webhook", {"body": '{"msg": "{{cell}}: {{message}} \\"x\\""}'}, fields, "")
    assert templated == b'{"msg": "web: v2 failed \\"x\\""}'


def test_an_application_cells_notification_names_its_application_and_system() -> None:
    cell = {
        "kind": "Cell",
        "metadata": {
            "name": "shop-web",
            "namespace": "ns",
            "labels": {"okra.mumo.co/system": "shop", "okra.mumo.co/application": "web"},
        },
    }
    failed = Fired("on-rollout-failed", "v2 failed")
    fields = fields_for(cell, CellStatus(phase="Error", health="Degraded"), failed)
    assert (fields["system"], fields["application"], fields["cell"]) == ("shop", "web", "shop-web")
    assert body("slack", {}, fields, "") == (
        b'{"text": "[okra] ns/shop: application web: on-rollout-failed: v2 failed"}'
    )
    templated = body("webhook", {"body": "{{system}}/{{application}}: {{trigger}}"}, fields, "")
    assert templated == b"shop/web: on-rollout-failed"
    alone = fields_for({**cell, "metadata": {"name": "web"}}, CellStatus(), failed)
    assert "system" not in alone
    assert "application" not in alone


def test_outbox_entries_are_keyed_by_the_change_and_merged_once() -> None:
    import datetime
    import json

    from okra_controllers.notifications.outbox import MAX_PENDING, entries, merged

    subs = subscriptions(
        {
            "notifications.okra.mumo.co/subscribe.all.ci": "",
            "notifications.okra.mumo.co/subscribe.on-rollout-failed.team": "#deploys",
        }
    )
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    fired = [Fired("on-rollout-started", "v2"), Fired("on-rollout-failed", "v2 failed")]

    def make(source: str) -> list[Any]:
        return entries(subs, fired, lambda f: {"trigger": f.trigger}, source=source, now=now)

    first = make("uid/41")
    assert [(e.trigger, e.service, e.recipient) for e in first] == [
        ("on-rollout-started", "ci", ""),
        ("on-rollout-failed", "ci", ""),
        ("on-rollout-failed", "team", "#deploys"),
    ]
    assert [json.loads(e.payload)["id"] for e in first] == [e.key for e in first]
    assert len({e.key for e in first}) == 3
    assert [e.key for e in make("uid/41")] == [e.key for e in first]  # same change, same keys
    assert not {e.key for e in make("uid/42")} & {e.key for e in first}
    again = merged(first, make("uid/41"))  # a re-planned change adds nothing
    assert again is not None
    assert [e.key for e in again] == [e.key for e in first]
    assert merged(None, []) is None
    many = merged(None, [e for i in range(30) for e in make(f"uid/{i}")])
    assert many is not None
    assert len(many) == MAX_PENDING
    assert many[-1].key == make("uid/29")[-1].key  # the newest are kept


def test_rollout_triggers_name_the_stage_each_completion_finished() -> None:
    from okra_controllers.api.v1alpha1.progressiverollout import (
        ProgressiveRolloutStatus,
        StageStatus,
    )
    from okra_controllers.notifications.triggers import rollout_triggers

    def st(rev: str, phases: list[str], phase: str = "Progressing", msg: str = "") -> Any:
        stages = [StageStatus(name=f"s{i}", phase=p) for i, p in enumerate(phases)]  # type: ignore[arg-type]
        return ProgressiveRolloutStatus(revision=rev, stages=stages, phase=phase, message=msg)  # type: ignore[arg-type]

    done = ["Completed", "Completed", "Pending"]
    # A new revision: its first stages complete in the same reconcile as the restart.
    fired = rollout_triggers(
        st("a", ["Completed"] * 3),
        st("b", done),
        [("RevisionChanged", "new"), ("StageCompleted", "s0"), ("StageCompleted", "s1")],
    )
    assert [(f.trigger, f.step) for f in fired] == [
        ("on-rollout-started", None),
        ("on-rollout-step-completed", 0),
        ("on-rollout-step-completed", 1),
    ]
    fired = rollout_triggers(
        st("b", done),
        st("b", ["Completed"] * 3, "Completed"),
        [("StageCompleted", "s2"), ("RolloutCompleted", "")],
    )
    assert [(f.trigger, f.step) for f in fired] == [
        ("on-rollout-step-completed", 2),
        ("on-rollout-completed", None),
    ]
    paused = st("b", done, "Paused", "stage 's2': analysis x is Inconclusive: `okra promote`")
    assert [f.trigger for f in rollout_triggers(st("b", done), paused, [])] == [
        "on-analysis-inconclusive"
    ]
    assert rollout_triggers(paused, paused, []) == []  # still paused: nothing new
    failed = rollout_triggers(st("b", done), st("b", done, "Failed"), [("StageFailed", "x")])
    assert [f.trigger for f in failed] == ["on-rollout-failed"]
