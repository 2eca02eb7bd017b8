"""Run N fresh hostile cases in-process and count what went wrong: `python3 -m tests.fuzz.run N [SEED]`.

Each case gets its own folder and a per-case time limit (SIGALRM; a case over it counts as a hang). Prints one
line per failing case and a summary: cases, tracebacks, hangs, files written, exits 2 that do not name the input.
"""

from __future__ import annotations

import random
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from .mutate import check, random_case

__all__ = ["main"]

CASE_SECONDS = 20


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


def main(count: int, seed: int) -> Counter:
    rng = random.Random(seed)
    tally: Counter = Counter()
    signal.signal(signal.SIGALRM, _alarm)
    started = time.monotonic()
    for number in range(count):
        case = random_case(rng)
        with tempfile.TemporaryDirectory(prefix="gpusched-fuzz-") as folder:
            signal.alarm(CASE_SECONDS)
            try:
                outcome, problems = check(case, Path(folder))
                tally[f"exit {outcome.code}"] += 1
            except _Hang:
                problems = [f"hang: over {CASE_SECONDS} s"]
            finally:
                signal.alarm(0)
        tally["cases"] += 1
        for problem in problems:
            kind = problem.split(":")[0].split(" (")[0]
            tally[kind] += 1
            print(f"case {number} ({case.describe}): {problem}", flush=True)
    tally["seconds"] = round(time.monotonic() - started)
    return tally


if __name__ == "__main__":
    found = main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    print(dict(found))
