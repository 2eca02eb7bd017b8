"""One deadline per command: started when the command starts, passed to every phase of every planner.

A phase (a heuristic, the classes, a model's build, a solve round, extraction, validation) asks it how long is
left, or `check`s it and stops with OutOfTime; the planner then answers with the best plan it already has (the
heuristic floor it computed first) and names, from `ran_out`, what did not finish.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["Deadline", "OutOfTime"]

LEAST_SOLVE = 0.01  # seconds a solve is given even with nothing left: CP-SAT needs a positive limit


class OutOfTime(Exception):
    """A phase reached the deadline before it ended: its result is none (half a result is no result)."""

    def __init__(self, phase: str) -> None:
        super().__init__(f"{phase}: out of time")
        self.phase = phase


@dataclass
class Deadline:
    """`limit` seconds from `began` (perf_counter): when every phase must have ended."""

    limit: float
    began: float = field(default_factory=time.perf_counter)
    ran_out: list[str] = field(default_factory=list)  # the phases that did not finish, in order

    @classmethod
    def start(cls, limit: float, began: float | None = None) -> Deadline:
        return cls(limit, time.perf_counter() if began is None else began)

    @property
    def at(self) -> float:
        return self.began + self.limit

    def left(self, reserve: float = 0.0) -> float:
        """Seconds left once `reserve` is kept for what must follow; never negative."""
        return max(0.0, self.at - reserve - time.perf_counter())

    def passed(self, reserve: float = 0.0) -> bool:
        return time.perf_counter() > self.at - reserve

    def spent(self) -> float:
        return time.perf_counter() - self.began

    def solve_seconds(self, reserve: float = 0.0) -> float:
        """What a solve may take: what is left, at least CP-SAT's least."""
        return max(self.left(reserve), LEAST_SOLVE)

    def note(self, phase: str) -> None:
        """Record that `phase` ran out of time (once)."""
        if phase not in self.ran_out:
            self.ran_out.append(phase)

    def check(self, phase: str, reserve: float = 0.0) -> None:
        """Stop `phase` with OutOfTime once the deadline (less `reserve`) has passed."""
        if self.passed(reserve):
            self.note(phase)
            raise OutOfTime(phase)
