"""Who acted (`okra_controllers.actors`): the annotations okra's CLI writes beside an action,
how the manager reads them back, and when it holds okra's admission policy to be in force
(only the policy and binding shipped, as the API server holds them, with nothing that lets a
write through)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from okra_controllers.actors import (
    ACTOR,
    ACTOR_ACTION,
    Actor,
    Credit,
    actor_annotations,
    actor_of,
    binding,
    in_force,
    policy,
)

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


def test_the_cli_binds_the_user_to_one_action_with_a_fresh_token() -> None:
    one, two = (
        actor_annotations("alice", "promote", "r1/2"),
        actor_annotations("alice", "promote", "r1/2"),
    )
    assert one[ACTOR] == "alice"
    assert one[ACTOR_ACTION] != two[ACTOR_ACTION]  # never the same twice
    actor = actor_of({k: v for k, v in one.items() if v is not None})
    assert actor is not None
    assert (actor.user, actor.action, actor.value) == ("alice", "promote", "r1/2")
    # the API server could not say who: no actor stays beside the action
    assert actor_annotations(None, "pause", "true") == {ACTOR: None, ACTOR_ACTION: None}


@pytest.mark.parametrize(
    "annotations",
    [
        {},
        {ACTOR: "alice"},
        {ACTOR_ACTION: "promote=r1/2 t"},
        {ACTOR: "", ACTOR_ACTION: "promote=r1/2 t"},
        {ACTOR: "alice", ACTOR_ACTION: "promote=r1/2"},  # no token
        {ACTOR: "alice", ACTOR_ACTION: "promote r1/2 t"},  # no action=value
        {ACTOR: "a" * 254, ACTOR_ACTION: "promote=r1/2 t"},  # longer than a record keeps
    ],
)
def test_what_is_not_okras_form_names_no_actor(annotations: dict[str, str]) -> None:
    assert actor_of(annotations) is None


def test_a_credit_is_given_once_and_only_for_its_action() -> None:
    actor = Actor("alice", "resume", "", "resume= t1")
    c = Credit(actor)
    assert c.user("pause", "true") == "unknown"
    assert c.user("resume", "") == "alice"
    assert c.user("resume", "") == "unknown"  # spent
    assert Credit(actor, spent="resume= t1").user("resume", "") == "unknown"
    assert Credit(None).user("resume", "") == "unknown"


def test_the_shipped_policy_and_binding_are_in_force() -> None:
    assert in_force(policy(), binding())
    assert not in_force(None, binding())
    assert not in_force(policy(), None)


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def change(doc: Obj) -> None:
        *parents, last = path.split(".")
        for p in parents:
            doc = doc.setdefault(p, {})
        doc[last] = value

    return change


@pytest.mark.parametrize(
    ("which", "change"),
    [
        ("policy", _set("spec.failurePolicy", "Ignore")),
        ("policy", _set("spec.matchConditions", [{"name": "x", "expression": "false"}])),
        ("policy", _set("spec.validations", [{"expression": "true"}])),
        ("policy", _set("spec.variables", [])),
        ("policy", _set("spec.matchConstraints.objectSelector", {"matchLabels": {"a": "b"}})),
        ("policy", _set("spec.matchConstraints.namespaceSelector", {"matchLabels": {"a": "b"}})),
        (
            "policy",
            _set(
                "spec.matchConstraints.excludeResourceRules",
                [{"apiGroups": ["okra.mumo.co"], "resources": ["cells"], "operations": ["*"]}],
            ),
        ),
        (
            "policy",
            _set(
                "spec.matchConstraints.resourceRules",
                [
                    {
                        "apiGroups": ["okra.mumo.co"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE"],
                        "resources": ["cells", "progressiverollouts"],
                    }
                ],
            ),
        ),
        ("binding", _set("spec.validationActions", ["Warn", "Audit"])),
        ("binding", _set("spec.policyName", "another")),
        (
            "binding",
            _set("spec.matchResources", {"namespaceSelector": {"matchLabels": {"a": "b"}}}),
        ),
    ],
)
def test_a_policy_or_binding_that_lets_a_write_through_is_not_in_force(
    which: str, change: Callable[[Obj], None]
) -> None:
    p, b = copy.deepcopy(policy()), copy.deepcopy(binding())
    change(p if which == "policy" else b)
    assert not in_force(p, b)


def test_what_the_api_server_adds_by_default_keeps_it_in_force() -> None:
    p, b = copy.deepcopy(policy()), copy.deepcopy(binding())
    match = p["spec"]["matchConstraints"]
    match.update({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}})
    match["resourceRules"][0]["scope"] = "*"
    b["spec"]["matchResources"] = {
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
    }
    assert in_force(p, b)
