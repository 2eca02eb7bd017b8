"""Taints, tolerations and node selection terms: the vocabulary both gpusched's model and kubectl JSON share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Taint", "Toleration", "untolerated", "selector_matches"]

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Taint(Strict):
    key: str
    value: str = ""
    effect: Effect = "NoSchedule"


class Toleration(Strict):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' ToleratesTaint: empty key with Exists matches every key; empty effect every effect."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def untolerated(taints: list[Taint], tolerations: list[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers (what the TaintToleration filter checks)."""
    for taint in taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())
