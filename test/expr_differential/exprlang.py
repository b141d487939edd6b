"""A client of the `exprlang` program (./exprlang: Argo Rollouts' EvalCondition on expr-lang).

`ExprLang` keeps one exprlang process and sends it JSON lines; values go both ways as tagged
JSON (JSON has no NaN/±Inf and no int/float distinction), see exprlang/main.go.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


@cache
def exprlang_binary() -> str:
    """$OKRA_EXPRLANG, else hack/build-exprlang.sh (built once from the Go module proxy, cached)."""
    found = os.environ.get("OKRA_EXPRLANG")
    if found:
        return found
    out = subprocess.run(
        [str(REPO / "hack" / "build-exprlang.sh")], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, f"hack/build-exprlang.sh failed:\n{out.stderr}"
    return out.stdout.strip()


def tag(value: Any, *, vectors: bool = True) -> dict[str, Any]:
    """A Python value as exprlang reads it. A list of floats becomes []float64 (as Argo's
    providers hand over a vector) and a list of ints []int, unless `vectors` is false; lists
    and maps inside others are []interface {} and map[string]interface {}, as the web
    provider's JSON documents are."""
    if value is None:
        return {"nil": True}
    if isinstance(value, bool):
        return {"b": value}
    if isinstance(value, int):
        return {"i": value}
    if isinstance(value, float):
        return {"f": _go_float(value)}
    if isinstance(value, str):
        return {"s": value}
    if isinstance(value, list):
        if vectors and value and all(isinstance(v, float) for v in value):
            return {"fv": [tag(v) for v in value]}
        if vectors and value and all(type(v) is int for v in value):
            return {"iv": value}
        return {"a": [tag(v, vectors=False) for v in value]}
    if isinstance(value, dict):
        return {"m": {k: tag(v, vectors=False) for k, v in value.items()}}
    raise TypeError(f"cannot send {type(value).__name__} to exprlang")


def untag(t: dict[str, Any]) -> Any:
    if "nil" in t:
        return None
    if "b" in t:
        return t["b"]
    if "i" in t:
        return int(t["i"])
    if "f" in t:
        return float(t["f"])
    if "s" in t:
        return t["s"]
    if "a" in t:
        return [untag(v) for v in t["a"]]
    if "m" in t:
        return {k: untag(v) for k, v in t["m"].items()}
    return Opaque(t["other"])


class Opaque(str):
    """A value exprlang returned that JSON-shaped data cannot be (a Go function, a struct)."""


def _go_float(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    return repr(f)


class ExprLang:
    """One exprlang process; `verdicts` and `values` send a batch and read every answer."""

    def __init__(self, binary: str) -> None:
        self._proc = subprocess.Popen(
            [binary],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=10)

    def _ask(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        self._proc.stdin.flush()
        return [json.loads(self._proc.stdout.readline()) for _ in requests]

    def verdicts(self, cases: list[tuple[str, Any]]) -> list[bool | str]:
        """Argo's EvalCondition of each (condition, result): True/False, or the error text."""
        answers = self._ask([{"expr": e, "result": tag(r)} for e, r in cases])
        return [a["verdict"] if "verdict" in a else str(a["error"]) for a in answers]

    def values(self, cases: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, Any]]:
        """expr-lang's value of each (expression, env): (True, value) or (False, error text)."""
        answers = self._ask(
            [{"expr": e, "env": {k: tag(v) for k, v in env.items()}} for e, env in cases]
        )
        return [(True, untag(a["value"])) if "value" in a else (False, a["error"]) for a in answers]
