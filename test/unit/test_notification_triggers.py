"""Which triggers a reconcile fires, from the status before and after and the events."""

from __future__ import annotations

from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.notifications.notifier import Notification, body
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
    n = Notification(
        "ns",
        "web",
        subs[1],
        failed,
        {"trigger": failed.trigger, "cell": "web", "namespace": "ns", "message": "v2 failed"},
    )
    assert body("slack", {}, n) == (
        b'{"text": "[okra] ns/web: on-rollout-failed: v2 failed", "channel": "#deploys"}'
    )
    templated = body("webhook", {"body": '{"msg": "{{cell}}: {{message}} \\"x\\""}'}, n)
    assert templated == b'{"msg": "web: v2 failed \\"x\\""}'
