"""Label selectors and the ALB listener rule okra owns (its conditions and priority)."""

from __future__ import annotations

from pydantic import Field

from okra_controllers.api.v1alpha1.common import ApiModel


class LabelSelector(ApiModel):
    match_labels: dict[str, str] = Field(default_factory=dict)


class HeaderCondition(ApiModel):
    name: str = Field(min_length=1, max_length=40)
    values: list[str] = Field(min_length=1, max_length=5)


class QueryStringCondition(ApiModel):
    key: str | None = None
    value: str = Field(min_length=1)


class ListenerRule(ApiModel):
    """The listener rule okra owns. It never touches the listener's default rule."""

    priority: int = Field(default=50000, ge=1, le=50000)
    """1 is evaluated first; the default, 50000, is the last before the default rule."""
    hosts: list[str] = Field(default_factory=list, max_length=5)
    path_patterns: list[str] = Field(default_factory=list, max_length=5)
    methods: list[str] = Field(default_factory=list, max_length=5)
    source_i_ps: list[str] = Field(default_factory=list, max_length=5, alias="sourceIPs")
    headers: list[HeaderCondition] = Field(default_factory=list, max_length=5)
    query_strings: list[QueryStringCondition] = Field(default_factory=list, max_length=5)

    def has_condition(self) -> bool:
        return bool(
            self.hosts
            or self.path_patterns
            or self.methods
            or self.source_i_ps
            or self.headers
            or self.query_strings
        )
