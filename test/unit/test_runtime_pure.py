"""Pure parts of okra_runtime: selectors, the indexed store, predicates,
handlers, typed errors, log redaction."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from okra_runtime.cache import LABEL_INDEX, OWNER_INDEX, Store, json_copy
from okra_runtime.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    NotFoundError,
    ServerError,
    api_error,
)
from okra_runtime.gvk import GVK, Resource
from okra_runtime.handler import EnqueueForOwner
from okra_runtime.labels import parse_selector, selector_from_dict
from okra_runtime.logging import ContextBinder, configure_logging
from okra_runtime.predicates import GenerationChanged, LabelSelectorPredicate
from okra_runtime.reconcile import Request


def obj(
    name: str,
    ns: str = "a",
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    gen: int = 1,
    rv: str = "1",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels or {},
            "generation": gen,
            "resourceVersion": rv,
            "ownerReferences": owners or [],
        },
    }


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("env in (prod, staging),tier", {"env": "prod", "tier": "x"}, True),
        ("env notin (prod)", {"env": "prod"}, False),
        ("!legacy", {"legacy": "1"}, False),
        ("", {"anything": "x"}, True),
    ],
)
def test_selector_string_form(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(text).matches(labels) is expected


def test_selector_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="invalid label selector"):
        parse_selector("app=(web")
    with pytest.raises(ValueError, match="unknown operator 'Near'"):
        selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Near"}]})
    with pytest.raises(ValueError, match="needs values"):
        selector_from_dict({"matchExpressions": [{"key": "a", "operator": "In"}]})


def test_selector_dict_form_round_trips_through_text() -> None:
    sel = selector_from_dict(
        {
            "matchLabels": {"role": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "old", "operator": "DoesNotExist"},
            ],
        }
    )
    assert str(sel) == "role=web,env in (dev,prod),!old"
    assert parse_selector(str(sel)) == sel


def test_store_indexes_follow_updates_and_deletes() -> None:
    s = Store()
    s.upsert(obj("x", labels={"app": "web"}, owners=[{"uid": "u1"}]))
    s.upsert(obj("y", ns="b", labels={"app": "web"}))
    assert [o["metadata"]["name"] for o in s.list(selector="app=web")] == ["x", "y"]
    assert [o["metadata"]["name"] for o in s.list("b", selector="app=web")] == ["y"]
    assert [o["metadata"]["name"] for o in s.by_index(OWNER_INDEX, "u1")] == ["x"]
    s.upsert(obj("x", labels={"app": "db"}))  # relabelled, owner gone
    assert s.by_index(OWNER_INDEX, "u1") == []
    assert [o["metadata"]["name"] for o in s.by_index(LABEL_INDEX, "app=db")] == ["x"]
    s.add_index("by-name-length", lambda o: [str(len(o["metadata"]["name"]))])
    assert len(s.by_index("by-name-length", "1")) == 2
    s.delete("a/x")
    assert s.by_index(LABEL_INDEX, "app=db") == []
    assert s.by_index("by-name-length", "1")[0]["metadata"]["name"] == "y"


def test_store_hands_out_copies() -> None:
    s = Store()
    s.upsert(obj("x", labels={"app": "web"}))
    got = s.get("x", "a")
    assert got is not None
    got["metadata"]["labels"]["app"] = "mutated"
    for listed in s.list():
        listed["metadata"]["name"] = "mutated"
    again = s.get("x", "a")
    assert again is not None
    assert again["metadata"]["labels"] == {"app": "web"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_json_copy_is_equal_and_independent(value: Any) -> None:
    copied = json_copy(value)
    assert copied == value
    if isinstance(value, (dict, list)) and value:
        assert copied is not value


def test_generation_changed_drops_status_updates_and_resyncs() -> None:
    p = GenerationChanged()
    assert not p.update(obj("x", gen=1, rv="1"), obj("x", gen=1, rv="2"))
    assert p.update(obj("x", gen=1), obj("x", gen=2))
    same = obj("x")
    assert not p.update(same, same)


def test_label_selector_predicate_sees_objects_leaving_the_selection() -> None:
    p = LabelSelectorPredicate("app=web")
    assert p.create(obj("x", labels={"app": "web"}))
    assert not p.create(obj("x"))
    assert p.update(obj("x", labels={"app": "web"}), obj("x"))


def test_owner_handler_enqueues_controller_owner_of_the_kind_only() -> None:
    got: list[Request] = []
    h = EnqueueForOwner(got.append, (), GVK("okra.mumo.co", "v1alpha1", "Cell"))
    h.on_add(
        obj(
            "child",
            owners=[
                {
                    "apiVersion": "okra.mumo.co/v1alpha1",
                    "kind": "Cell",
                    "name": "web",
                    "uid": "1",
                    "controller": True,
                },
                {
                    "apiVersion": "other.io/v1alpha1",
                    "kind": "Cell",
                    "name": "x",
                    "uid": "2",
                    "controller": True,
                },
                {"apiVersion": "okra.mumo.co/v1alpha1", "kind": "Cell", "name": "y", "uid": "3"},
            ],
        )
    )
    assert got == [Request("web", "a")]


def test_typed_errors_carry_the_server_message() -> None:
    body = {
        "kind": "Status",
        "reason": "Invalid",
        "message": "spec.x: Invalid value",
        "details": {"causes": [{"field": "spec.x", "message": "bad"}]},
    }
    err = api_error(422, json.dumps(body).encode())
    assert isinstance(err, InvalidError)
    assert err.message == "spec.x: Invalid value"
    assert err.causes == [{"field": "spec.x", "message": "bad"}]
    assert isinstance(api_error(409, {"reason": "AlreadyExists"}), AlreadyExistsError)
    assert isinstance(api_error(409, {"reason": "Conflict"}), ConflictError)
    assert isinstance(api_error(404, b""), NotFoundError)
    plain = api_error(503, b"upstream connect error")
    assert isinstance(plain, ServerError)
    assert "upstream connect error" in str(plain)


def test_resource_paths() -> None:
    core = Resource(GVK("", "v1", "ConfigMap"), "configmaps", True)
    assert core.path("ns", "x") == "/api/v1/namespaces/ns/configmaps/x"
    crd = Resource(GVK("okra.mumo.co", "v1alpha1", "Cell"), "cells", True)
    assert (
        crd.path("ns", "web", "status")
        == "/apis/okra.mumo.co/v1alpha1/namespaces/ns/cells/web/status"
    )
    cluster = Resource(GVK("", "v1", "Namespace"), "namespaces", False)
    assert cluster.path("ignored", "x") == "/api/v1/namespaces/x"


def test_logs_redact_secrets_wherever_they_are() -> None:
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    import structlog

    structlog.get_logger("t").info(
        "connecting",
        token="abc123",
        cluster={
            "name": "c1",
            "config": {"bearerToken": "s3cr3t", "tlsClientConfig": {"caData": "PEM"}},
        },
    )
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["token"] == "[redacted]"
    assert line["cluster"]["name"] == "c1"
    assert line["cluster"]["config"]["bearerToken"] == "[redacted]"
    assert line["cluster"]["config"]["tlsClientConfig"]["caData"] == "[redacted]"
    assert "s3cr3t" not in out.getvalue()
    assert "abc123" not in out.getvalue()
    configure_logging("console", "info")


def test_context_binder_binds_structlog_keys_and_restores_them() -> None:
    """The controller's per-reconcile binding: the keys appear on every line inside the
    block (structlog's own lines and standard-library ones), an outer value of the same
    key comes back after it, a key that was not bound before is gone again, and a task
    started inside keeps the values it was started with."""
    import asyncio
    import logging

    import structlog

    binder = ContextBinder("controller", "namespace", "name", "reconcile_id")
    out = io.StringIO()
    configure_logging("json", "info", stream=out)

    async def scenario() -> list[str]:
        seen: list[str] = []
        structlog.contextvars.bind_contextvars(controller="outer")
        with binder("cell", "ns1", "web", "abc"):
            structlog.get_logger("t").info("inside")
            logging.getLogger("botocore").warning("stdlib inside")
            assert structlog.contextvars.get_contextvars()["reconcile_id"] == "abc"

            async def child() -> None:
                await asyncio.sleep(0)
                seen.append(structlog.contextvars.get_contextvars()["name"])

            task = asyncio.create_task(child())
        await task
        structlog.get_logger("t").info("after")
        structlog.contextvars.unbind_contextvars("controller")
        return seen

    try:
        seen = asyncio.run(scenario())
        lines = [json.loads(line) for line in out.getvalue().strip().splitlines()]
    finally:
        configure_logging("console", "info")
    assert seen == ["web"]
    bound = {"controller": "cell", "namespace": "ns1", "name": "web", "reconcile_id": "abc"}
    for line in lines[:2]:
        assert {k: line.get(k) for k in bound} == bound
    assert lines[2]["controller"] == "outer"
    assert not {"namespace", "name", "reconcile_id"} & set(lines[2])
    with pytest.raises(TypeError):
        binder("too", "few")


def test_standard_library_logs_are_json_lines_with_the_logger_name() -> None:
    """botocore, aiohttp, asyncio log through `logging`: in JSON mode their lines are JSON
    too, with the same keys as okra's own, plus `logger`."""
    import logging

    import structlog

    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    try:
        logging.getLogger("botocore.credentials").warning("found %s in %s", "keys", "env")
        logging.getLogger("aiohttp.access").info("below warning: dropped")
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("asyncio").exception("task failed", extra={"x": 1})
        structlog.get_logger("t").warning("own line", authorization="Bearer abc")
        lines = [json.loads(line) for line in out.getvalue().strip().splitlines()]
    finally:
        configure_logging("console", "info")
    assert [(x["level"], x["event"], x.get("logger")) for x in lines] == [
        ("warning", "found keys in env", "botocore.credentials"),
        ("error", "task failed", "asyncio"),
        ("warning", "own line", None),
    ]
    assert all(x["timestamp"].endswith("Z") for x in lines)
    assert "ValueError: boom" in lines[1]["exception"]
    assert lines[2]["authorization"] == "[redacted]"


def test_informer_backoff_is_capped_low_while_the_server_is_unreachable() -> None:
    from okra_runtime.informer import InformerOptions, backoff_delay

    o = InformerOptions()
    assert [backoff_delay(o, n, True) for n in range(4)] == [0.2, 0.4, 0.8, 1.0]
    assert backoff_delay(o, 100, True) == 1.0
    assert backoff_delay(o, 100, False) == 30.0  # the server refuses: client-go's cap


def test_unreachable_is_the_server_or_path_failing_not_refusing() -> None:
    import aiohttp

    from okra_runtime.errors import (
        ForbiddenError,
        NotFoundError,
        ServerError,
        TooManyRequestsError,
        WatchStalledError,
        unreachable,
    )

    assert unreachable(ConnectionRefusedError())
    assert unreachable(ConnectionError("GET /api: refused"))
    assert unreachable(aiohttp.ServerDisconnectedError())
    assert unreachable(WatchStalledError("silent"))
    assert unreachable(ServerError(503, "ServiceUnavailable", "etcd"))
    assert unreachable(TooManyRequestsError(429, "TooManyRequests", "slow down"))
    assert not unreachable(ForbiddenError(403, "Forbidden", "no"))
    assert not unreachable(NotFoundError(404, "NotFound", "gone"))
    assert not unreachable(ValueError("bad json"))
