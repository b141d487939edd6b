"""The API server refuses each field okra would not read (test/unit/test_ignored_fields.py's
table), with the message of the CRD's validation rule, which names the field; and admits
the same objects without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from okra_testkit.envtest import ControlPlane
from unit.test_ignored_fields import REFUSED, SYSTEM

REPO = Path(__file__).resolve().parents[2]
PLURALS = {
    "Cell": "cells",
    "AWSTargetGroupBinding": "awstargetgroupbindings",
    "AWSTargetGroupSet": "awstargetgroupsets",
    "Check": "checks",
}


async def dry_run(kube: client.ApiClient, ns: str, kind: str, spec: dict[str, Any]) -> str:
    """ "" when the API server admits the object (dry run, strict field validation), else
    what it said."""
    body = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": kind,
        "metadata": {"name": "x", "namespace": ns},
        "spec": spec,
    }
    try:
        await client.CustomObjectsApi(kube).create_namespaced_custom_object(
            "okra.mumo.co",
            "v1alpha1",
            ns,
            PLURALS[kind],
            body,
            dry_run="All",
            field_validation="Strict",
        )
    except ApiException as e:
        return str(json.loads(e.body or b"{}").get("message") or e)
    return ""


@pytest.fixture
def crds(control_plane: ControlPlane) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])


@pytest.mark.usefixtures("crds")
async def test_each_field_okra_would_not_read_is_refused_naming_it(
    kube: client.ApiClient, namespace: str
) -> None:
    said = {case: await dry_run(kube, namespace, kind, spec) for case, kind, spec, _ in REFUSED}
    missing = {case: said[case] for case, _, _, expected in REFUSED if expected not in said[case]}
    assert missing == {}
    # and the objects without that field are admitted
    assert await dry_run(kube, namespace, "Cell", SYSTEM) == ""
    tagged = REFUSED[-1][2]["generators"]
    assert await dry_run(kube, namespace, "AWSTargetGroupSet", {"generators": tagged}) == ""


@pytest.mark.usefixtures("crds")
async def test_a_seed_check_stored_with_the_old_default_interval_applies_again(
    kube: client.ApiClient, namespace: str
) -> None:
    """An earlier okra's schema stored spec.interval: 30s in seed 000's Check: the API
    server admits it again (okra warns); another interval beside spec.analysis is refused."""
    seed = {"analysis": {"interval": "10s", "query": "sum(errors)", "max": 0.1}}
    assert await dry_run(kube, namespace, "Check", {**seed, "interval": "30s"}) == ""
    said = await dry_run(kube, namespace, "Check", {**seed, "interval": "15s"})
    assert "spec.interval beside spec.analysis" in said
