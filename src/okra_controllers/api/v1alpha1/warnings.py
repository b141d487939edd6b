"""What a spec, as written, says that okra accepts and warns about: one list per kind, the
same that the kind's controller emits as Warning Events (`DeprecatedSpelling`) when the
generation changes and that `okra lint` reports as warnings.

A field okra accepts but does not read is either refused by the CRD (a validation rule
that names it and says what to write instead) or listed here, where refusing it would
break manifests written for the original okra.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from okra_controllers.api.v1alpha1.analysis import STORED_INTERVAL, CheckSpec
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_controllers.api.v1alpha1.targetgroupbinding import node_selector_warnings
from okra_controllers.api.v1alpha1.targetgroupset import spelling_warnings


def spec_warnings(kind: str, spec: Any) -> list[str]:
    """Each warning of a `kind` spec, as `path: what to write instead`."""
    spec = spec if isinstance(spec, dict) else {}
    if kind == "AWSTargetGroupSet":
        return spelling_warnings(spec)
    if kind == "AWSTargetGroupBinding":
        return node_selector_warnings(spec.get("targets") or [])
    if kind == "Check":
        return check_warnings(spec)
    out = deprecated_spellings(kind, spec)
    ingress = spec.get("ingress") if kind == "Cell" else None
    if (
        isinstance(ingress, dict)
        and ingress.get("type") == "AWSNetworkLoadBalancer"
        and "awsNetworkLoadBalancer" not in ingress
        and "awsApplicationLoadBalancer" in ingress
    ):
        # the Cell plan's `MisplacedListener` Event says the same
        out.append(
            "spec.ingress.awsApplicationLoadBalancer: holds the listener of this "
            "AWSNetworkLoadBalancer Cell (the original okra's spelling, read as it is): "
            "rename the key to spec.ingress.awsNetworkLoadBalancer"
        )
    return out


def check_warnings(spec: Any) -> list[str]:
    """A Check's vars that nothing refers to, and the default interval an earlier okra
    stored beside spec.analysis (the Check controller's `UnusedField` Events)."""
    try:
        names = CheckSpec.model_validate(spec).unused_vars()
    except ValidationError:
        return []  # the Check controller reports the spec as invalid
    out = []
    if isinstance(spec, dict) and "analysis" in spec and spec.get("interval") == STORED_INTERVAL:
        out.append(
            f"spec.interval: {STORED_INTERVAL} beside spec.analysis (the original okra's "
            "spelling) is not read (an earlier okra stored this default there): remove "
            "spec.interval, and write spec.analysis.interval to change how often the check runs"
        )
    return out + [
        f"spec.vars.{name}: no {{{{.Vars.{name}}}}} in the check's provider or query refers "
        "to it, so it is not used: remove it, or correct the name where it is used"
        for name in names
    ]
