"""What the API server has served, from its own /metrics: for benches and tests that print
how many requests a run cost."""

from __future__ import annotations

import collections

from okra_runtime import Client


async def apiserver_requests(c: Client) -> collections.Counter[str]:
    """`apiserver_request_total` summed by verb and resource (`"PUT cells/status"`), without
    WATCH. The counts are the API server's since it started: subtract two readings."""
    resp = await c._send("GET", "/metrics")  # text, not JSON
    async with resp:
        text = await resp.text()
    out: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels, value = line[len("apiserver_request_total{") :].rsplit("} ", 1)
            parts = dict(kv.split("=", 1) for kv in labels.split(",") if "=" in kv)
            verb = parts.get("verb", "").strip('"')
            resource = parts.get("resource", "").strip('"')
            sub = parts.get("subresource", "").strip('"')
            if verb == "WATCH" or not resource:
                continue
            out[f"{verb} {resource}{'/' + sub if sub else ''}"] += int(float(value))
    return out
