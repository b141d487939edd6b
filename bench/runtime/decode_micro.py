"""bench/runtime/decode_micro.py: CPU to decode a list page of 500 ConfigMaps and one watch event,
json vs orjson, and of a cache read (json_copy) with and without managedFields; best of 5.

    .venv/bin/python bench/runtime/decode_micro.py
"""

# ruff: noqa: E501
from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import Any

import orjson

item: dict[str, Any] = {
    "metadata": {
        "name": "cm-00001",
        "namespace": "bench-okra-runtime",
        "uid": "0b9a6f0e-5d7e-4c1e-9b1e-3f2a6c7d8e9f",
        "resourceVersion": "123456",
        "creationTimestamp": "2026-11-24T00:35:00Z",
        "labels": {"bench": "1"},
        "managedFields": [
            {
                "manager": "OpenAPI-Generator",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-11-24T00:35:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": {".": {}, "f:gen": {}, "f:value": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:bench": {}}},
                },
            }
        ],
    },
    "data": {"gen": "1", "value": "object 1"},
}
page = {
    "kind": "ConfigMapList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "1"},
    "items": [
        dict(copy.deepcopy(item), metadata={**item["metadata"], "name": f"cm-{i:05d}"})
        for i in range(500)
    ],
}
raw = json.dumps(page).encode()
ev = json.dumps({"type": "MODIFIED", "object": item}).encode()


def best(f: Callable[[], Any], n: int = 50, reps: int = 5) -> float:
    out = []
    for _ in range(reps):
        s = time.process_time()
        for _ in range(n):
            f()
        out.append((time.process_time() - s) / n)
    return min(out)


a = best(lambda: json.loads(raw))
b = best(lambda: orjson.loads(raw))
c = best(lambda: json.loads(ev), 20000)
d = best(lambda: orjson.loads(ev), 20000)
print(
    f"page of 500 ConfigMaps ({len(raw) // 1024} KiB): json {a * 1e3:.2f} ms, orjson {b * 1e3:.2f} ms ({a / b:.2f}x); one watch event ({len(ev)} B): json {c * 1e6:.1f} us, orjson {d * 1e6:.1f} us ({c / d:.2f}x)"
)
from okra_runtime.cache import json_copy  # noqa: E402
from okra_runtime.informer import drop_managed_fields  # noqa: E402

objs = orjson.loads(raw)["items"]
stripped = [drop_managed_fields(json_copy(o)) for o in objs]
e = best(lambda: [json_copy(o) for o in objs])
f = best(lambda: [json_copy(o) for o in stripped])
print(
    f"cache read (json_copy) of 500 ConfigMaps: with managedFields {e * 1e3:.2f} ms, without {f * 1e3:.2f} ms ({e / f:.2f}x)"
)
