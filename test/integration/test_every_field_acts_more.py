"""Every field of a Freeze and a ClusterFreeze acts, is refused, or warns (issue 41 §1),
judged by the walk of test_every_field_acts.py (its `walk`: each optional field set on its
own, dry run on the real kube-apiserver, Warnings compared, then the pure function).

A freeze is judged by what `freeze/hold.py` says of it (walk_freeze.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from integration.test_every_field_acts import (
    CRDS,
    WALKED_APART,
    Judge,
    assert_every_field_acts,
    walk,
)
from integration.walk_freeze import (
    CLUSTER_FREEZE_SHAPES,
    FREEZE_SHAPES,
    cluster_freeze_outputs,
    freeze_outputs,
)
from integration.walk_targetgroups import (
    BINDING_SHAPES,
    SET_SHAPES,
    binding_outputs,
    set_outputs,
)
from okra_testkit.envtest import ControlPlane

SHAPES: list[tuple[str, str, dict[str, Any], Judge]] = [
    *(("Freeze", n, s, freeze_outputs) for n, s in FREEZE_SHAPES.items()),
    *(("ClusterFreeze", n, s, cluster_freeze_outputs) for n, s in CLUSTER_FREEZE_SHAPES.items()),
    *(("AWSTargetGroupBinding", n, s, binding_outputs) for n, s in BINDING_SHAPES.items()),
    *(("AWSTargetGroupSet", n, s, set_outputs) for n, s in SET_SHAPES.items()),
]


def test_these_kinds_are_walked_here() -> None:
    here = __name__.rsplit(".", 1)[-1] + ".py"
    assert {k for k, _, _, _ in SHAPES} == {k for k, m in WALKED_APART.items() if m == here}


@pytest.mark.parametrize(
    ("kind", "shape", "judge"),
    [(k, s, j) for k, _, s, j in SHAPES],
    ids=[f"{k}-{n}" for k, n, _, _ in SHAPES],
)
async def test_every_field_acts_is_refused_or_warns(
    control_plane: ControlPlane,
    kube: client.ApiClient,
    namespace: str,
    kind: str,
    shape: dict[str, Any],
    judge: Judge,
) -> None:
    control_plane.install_crds([CRDS])
    verdict, broken = await walk(kube, namespace, kind, shape, judge)
    assert_every_field_acts(kind, verdict, broken, lambda path: False)
    assert verdict.refused  # the kinds have rules (matchExpressions): one was tried
