"""Count how okra's verdicts differ from expr-lang's on the generated conditions, by direction.

    OKRA_EXPRLANG="$(hack/build-exprlang.sh)" PYTHONPATH=test \
        .venv/bin/python -m expr_differential.census [batches]

draws `batches` (default 400) batches of 50 (condition, result) pairs as the differential test
does (the same pairs), asks both evaluators, and prints how many pairs were
compared, how many distinct conditions, how many verdicts differ dangerously (okra true,
expr-lang false or an error) and otherwise, and the first few of each, without the test's
classification of documented deviations: run it against an older evaluator to see how far it
was from expr-lang.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from expr_differential.conditions import cases as batch_of
from expr_differential.exprlang import ExprLang, exprlang_binary
from okra_controllers.analysis.expr import ExprError, evaluate_condition


def okra(condition: str, result: Any) -> bool | str:
    try:
        return evaluate_condition(condition, result)
    except ExprError as e:
        return f"error: {e}"


def main(argv: list[str]) -> int:
    batches = int(argv[1]) if len(argv) > 1 else 400
    cases = [pair for batch in range(batches) for pair in batch_of(batch)]
    exprlang = ExprLang(exprlang_binary())
    theirs: list[bool | str] = []
    for start in range(0, len(cases), 200):  # small batches: both pipes stay unblocked
        theirs += exprlang.verdicts(cases[start : start + 200])
    exprlang.close()
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {"dangerous": [], "other": []}
    for (condition, result), their in zip(cases, theirs, strict=True):
        ours = okra(condition, result)
        counts["pairs"] += 1
        if (ours == their) if isinstance(their, bool) else isinstance(ours, str):
            continue
        kind = "dangerous" if ours is True else "other"
        counts[kind] += 1
        examples[kind].append(
            f"  {condition!r} with result={result!r}: okra {ours}, expr-lang {their}"
        )
    print(
        f"{counts['pairs']} pairs ({len({c for c, _ in cases})} distinct conditions):"
        f" {counts['dangerous']} dangerous differences (okra true, expr-lang false or an error),"
        f" {counts['other']} other differences"
    )
    for kind, lines in examples.items():
        if lines:
            print(f"{kind}, the first {min(len(lines), 20)}:", *lines[:20], sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
