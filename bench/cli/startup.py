"""How long `okra <args>` takes to start and exit (default: `okra --help`).

    .venv/bin/python bench/cli/startup.py [-n 20] [ARGS...]

Runs the installed `okra` console script N times, one after another, and prints
the minimum and the median wall-clock time. The minimum is the figure to
compare (the machine's other load only ever adds time). The anchor is Python's
own start (`python -c pass`), measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(cmd: list[str], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("args", nargs="*", default=["--help"])
    a = p.parse_args()
    okra = str(Path(sys.executable).with_name("okra"))
    for label, cmd in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("okra " + " ".join(a.args), [okra, *a.args]),
    ):
        t = timed(cmd, a.n)
        print(
            f"{label:40s} min {min(t) * 1000:7.1f} ms  median {statistics.median(t) * 1000:7.1f} ms"
        )


if __name__ == "__main__":
    main()
