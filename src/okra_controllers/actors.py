"""Who acted: the user a rollout's record credits with a user action, where the API server
can prove it, and `unknown` where it cannot.

`okra promote`, `pause`, `resume`, `abort`, `retry` and `set version` (and the dashboard,
which runs the same commands) write two annotations beside the action, in the same patch:

- `okra.mumo.co/actor`: the user making the request, as the API server authenticated them
  (a `SelfSubjectReview`, with the same credentials);
- `okra.mumo.co/actor-action`: `<action>=<value> <token>`, the one action it was written
  with (`promote=<rolloutId>/<step>`, `pause=true`, `abort=<rolloutId>`...) and a fresh token,
  so that it is never the same twice.

The ValidatingAdmissionPolicy `okra-actor` (`config/rbac/actor_policy.yaml`) refuses a write
of a Cell or ProgressiveRollout that sets or changes either annotation unless the actor is
the requesting user. okra-manager credits an action only while that policy and its binding
(`Deny`) are what the API server holds (`in_force`), only to an actor written for exactly
that action and value, and each actor only once (`Credit`): a hand-written annotation, or an
action under an actor left from an earlier one, is `unknown`.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from okra_controllers.api.kinds import (
    ADMISSION_POLICY,
    ADMISSION_POLICY_BINDING,
    SELF_SUBJECT_REVIEW,
)
from okra_controllers.api.v1alpha1.common import GROUP
from okra_runtime.cache import Store
from okra_runtime.client import Client
from okra_runtime.errors import ApiError
from okra_runtime.manager import Manager

Obj = dict[str, Any]

ACTOR = "okra.mumo.co/actor"
ACTOR_ACTION = "okra.mumo.co/actor-action"
POLICY_NAME = "okra-actor"
"""The ValidatingAdmissionPolicy and its binding, both by this name (cluster-scoped)."""
UNKNOWN = "unknown"
"""The user of an action the API server cannot vouch for."""
MAX_USER = 253
"""The longest username a record keeps; a longer one is recorded as unknown, never cut."""
MAX_ACTOR_ACTION = 512

_ANN = "object.metadata.annotations"
_OLD = "oldObject.metadata.annotations"


def _value_of(annotations: str, key: str, guard: str) -> str:
    return f"{guard}has({annotations}) && '{key}' in {annotations} ? {annotations}['{key}'] : ''"


UPDATE = "request.operation == 'UPDATE' && "
VARIABLES: tuple[tuple[str, str], ...] = (
    ("actor", _value_of(_ANN, ACTOR, "")),
    ("action", _value_of(_ANN, ACTOR_ACTION, "")),
    ("oldActor", _value_of(_OLD, ACTOR, UPDATE)),
    ("oldAction", _value_of(_OLD, ACTOR_ACTION, UPDATE)),
)
"""The policy's CEL variables: each annotation of the object and of the object before the
write, '' where it is unset (oldObject is null on CREATE)."""
EXPRESSION = (
    "(variables.actor == variables.oldActor && variables.action == variables.oldAction)"
    " || (variables.actor == '' && variables.action == '')"
    " || variables.actor == request.userInfo.username"
)
"""Unchanged, removed together, or set by the user it names."""
MESSAGE_EXPRESSION = (
    f"'{ACTOR} ' + (variables.actor == '' ? '(unset)' : variables.actor)"
    f" + ' is not the user making this request (' + request.userInfo.username + '): "
    f"{ACTOR} and {ACTOR_ACTION} are set or changed only by the user the first names'"
)
RESOURCES = ("cells", "progressiverollouts")
OPERATIONS = ("CREATE", "UPDATE")


def policy() -> Obj:
    """The ValidatingAdmissionPolicy that makes an actor annotation the API server's word."""
    return {
        "apiVersion": f"{ADMISSION_POLICY.group}/{ADMISSION_POLICY.version}",
        "kind": ADMISSION_POLICY.kind,
        "metadata": {"name": POLICY_NAME},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [GROUP],
                        "apiVersions": ["*"],
                        "operations": list(OPERATIONS),
                        "resources": list(RESOURCES),
                    }
                ]
            },
            "variables": [{"name": n, "expression": e} for n, e in VARIABLES],
            "validations": [
                {
                    "expression": EXPRESSION,
                    "messageExpression": MESSAGE_EXPRESSION,
                    "reason": "Forbidden",
                }
            ],
        },
    }


def binding() -> Obj:
    """Its binding: every Cell and ProgressiveRollout, refused (Deny)."""
    return {
        "apiVersion": f"{ADMISSION_POLICY_BINDING.group}/{ADMISSION_POLICY_BINDING.version}",
        "kind": ADMISSION_POLICY_BINDING.kind,
        "metadata": {"name": POLICY_NAME},
        "spec": {"policyName": POLICY_NAME, "validationActions": ["Deny"]},
    }


def _empty_selector(sel: Any) -> bool:
    return not sel or (not sel.get("matchLabels") and not sel.get("matchExpressions"))


def _covers(rules: list[Obj]) -> bool:
    """Whether `rules` match every operation okra's policy checks on each of its kinds."""

    def has(r: Obj, key: str, wanted: str) -> bool:
        return wanted in (r.get(key) or []) or "*" in (r.get(key) or [])

    return all(
        any(
            has(r, "apiGroups", GROUP)
            and has(r, "resources", res)
            and has(r, "operations", op)
            and has(r, "apiVersions", "v1alpha1")
            for r in rules
        )
        for res in RESOURCES
        for op in OPERATIONS
    )


def in_force(served_policy: Obj | None, served_binding: Obj | None) -> bool:
    """Whether the API server holds okra's policy and a binding that denies with it: the
    shipped variables and validation, on every Cell and ProgressiveRollout write, failing
    closed, with no condition, selector or exclusion that would let a write through."""
    if served_policy is None or served_binding is None:
        return False
    spec: Obj = served_policy.get("spec") or {}
    match: Obj = spec.get("matchConstraints") or {}
    variables = [(v.get("name"), v.get("expression")) for v in spec.get("variables") or []]
    validations = [v.get("expression") for v in spec.get("validations") or []]
    policy_ok = (
        spec.get("failurePolicy", "Fail") == "Fail"
        and not spec.get("matchConditions")
        and not spec.get("paramKind")
        and _covers(match.get("resourceRules") or [])
        and not match.get("excludeResourceRules")
        and _empty_selector(match.get("namespaceSelector"))
        and _empty_selector(match.get("objectSelector"))
        and all(v in variables for v in VARIABLES)
        and EXPRESSION in validations
    )
    bspec: Obj = served_binding.get("spec") or {}
    scope: Obj = bspec.get("matchResources") or {}
    binding_ok = (
        bspec.get("policyName") == POLICY_NAME
        and "Deny" in (bspec.get("validationActions") or [])
        and not bspec.get("paramRef")
        and not scope.get("resourceRules")
        and not scope.get("excludeResourceRules")
        and _empty_selector(scope.get("namespaceSelector"))
        and _empty_selector(scope.get("objectSelector"))
    )
    return policy_ok and binding_ok


class PolicyWatch:
    """Whether okra's policy is in force, from the manager's caches of the two kinds (each
    write of either is seen as the API server holds it, never a read per reconcile)."""

    def __init__(self, policies: Store, bindings: Store) -> None:
        self.policies, self.bindings = policies, bindings

    def enforced(self) -> bool:
        return in_force(
            self.policies.get(POLICY_NAME, copy=False), self.bindings.get(POLICY_NAME, copy=False)
        )


def policy_watch(mgr: Manager) -> PolicyWatch:
    """The manager's PolicyWatch: one informer of each kind, shared by the controllers."""
    return PolicyWatch(
        mgr.informer_for(ADMISSION_POLICY).store,
        mgr.informer_for(ADMISSION_POLICY_BINDING).store,
    )


# -- what the CLI writes ---------------------------------------------------------------------


def _token() -> str:
    return f"{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def actor_annotations(user: str | None, action: str, value: str) -> dict[str, str | None]:
    """The annotations binding `user` to `action` with `value` (a merge patch's part); with
    no user (the API server could not say), both removed, so that no earlier actor stays
    beside this action."""
    if user is None:
        return {ACTOR: None, ACTOR_ACTION: None}
    return {ACTOR: user, ACTOR_ACTION: f"{action}={value} {_token()}"}


async def whoami(client: Client) -> str | None:
    """The username the API server authenticates `client`'s credentials as (a
    SelfSubjectReview); None where it cannot say (an API server without the kind, or one
    that refuses it)."""
    review = {
        "apiVersion": f"{SELF_SUBJECT_REVIEW.group}/{SELF_SUBJECT_REVIEW.version}",
        "kind": SELF_SUBJECT_REVIEW.kind,
        "metadata": {},
    }
    try:
        out = await client.create(review)
    except (ApiError, LookupError, ValueError):  # LookupError: the kind is not served
        return None
    user = ((out.get("status") or {}).get("userInfo") or {}).get("username")
    return user if isinstance(user, str) and user else None


# -- what the manager credits ----------------------------------------------------------------


@dataclass(frozen=True)
class Actor:
    user: str
    action: str
    value: str
    written: str
    """The `okra.mumo.co/actor-action` annotation as written (token included)."""


def actor_of(annotations: Mapping[str, str]) -> Actor | None:
    """The actor the annotations name and the action it was written for; None when either
    annotation is missing or not okra's form."""
    user, written = annotations.get(ACTOR), annotations.get(ACTOR_ACTION)
    if not user or not written or len(user) > MAX_USER or len(written) > MAX_ACTOR_ACTION:
        return None
    bound, sep, token = written.rpartition(" ")
    action, eq, value = bound.partition("=")
    if not sep or not token or not eq or not action:
        return None
    return Actor(user, action, value, written)


class Credit:
    """Who did each user action a reconcile records: the actor the annotations name, for
    the one action and value it was written with, once; `unknown` otherwise, and for every
    action while okra's policy is not in force (`actor` None). `spent`: the
    `okra.mumo.co/actor-action` already credited (the Cell's `status.creditedActor`), which
    credits nothing again."""

    def __init__(self, actor: Actor | None, spent: str | None = None) -> None:
        self.actor = actor
        self.spent = spent

    def user(self, action: str, value: str) -> str:
        a = self.actor
        if a is None or a.action != action or a.value != value or a.written == self.spent:
            return UNKNOWN
        self.spent = a.written
        return a.user


def credit_for(annotations: Mapping[str, str], enforced: bool, spent: str | None) -> Credit:
    """The Credit of an object with `annotations` (okra's policy `enforced` or not)."""
    return Credit(actor_of(annotations) if enforced else None, spent)
