"""The Check's shapes and judge for the field walk (test_every_field_acts.py).

What a Check does with its spec, without I/O (`analysis/check_controller.py`): the
interval it measures at, the history it keeps, the provider it measures with (its own or
okra-manager's default, with `query` put in and `{{.Vars.NAME}}` rendered: what `measure`
is given) and the phase it judges each of a table of results to. A provider's own fields
act when they reach that provider; whether the provider reads each of them is judged by
the providers' tests (test/integration/analysis/test_providers.py).
"""

from __future__ import annotations

import math
from typing import Any

from okra_controllers.analysis.check_controller import CheckError, judge, render_provider
from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.analysis import Check
from okra_controllers.manager import default_provider

DEFAULT = default_provider('{"prometheus": {"address": "http://prometheus.monitoring:9090"}}')
RESULTS: list[Any] = [0.05, 0.5, 5.0, -1.0, [0.05, 0.2], math.nan, [], "up", True, None]
"""Results a provider may give: numbers inside and outside any bounds, a list, NaN, an
empty vector, text, a boolean, no data."""

CHECK_SHAPES: dict[str, dict[str, Any]] = {
    "prometheus": {
        "interval": "10s",
        "provider": {
            "prometheus": {
                "address": "http://prometheus:9090",
                "query": 'sum(errors{cluster="{{.Vars.cluster}}"})',
            }
        },
        "vars": {"cluster": "web-1"},
        "max": 0.1,
    },
    "seed-000": {"analysis": {"interval": "10s", "query": "sum(errors)", "max": 0.1}},
}
"""A Check with its own provider and vars (as a system Cell writes it), and seed 000's
(`spec.analysis`, on okra-manager's default provider)."""


def check_outputs(raw: dict[str, Any]) -> list[Any]:
    spec = Check.model_validate(raw).spec
    out: list[Any] = [parse_duration(spec.interval), spec.history_limit]
    try:
        provider = render_provider(spec, DEFAULT)
        out.append(provider.model_dump(by_alias=True, exclude_none=True, mode="json"))
    except CheckError as e:
        out.append(str(e))
    out += [judge(spec, value) for value in RESULTS]
    return out
