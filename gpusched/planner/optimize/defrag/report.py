"""defrag's input and output: the target shape (`--for`), and the pydantic report of a move plan."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from ....errors import InputError
from ....models.scheduling import Toleration
from ....models.workload import GpuNeeds, Job, Pod
from ...validate import Violation
from ..solver import SolveReport

__all__ = ["DefragReport", "Greedy", "Move", "ShapeInfo", "Step", "TargetPlacement", "TargetShape", "parse_shape"]


_SHAPE = re.compile(r"^(\d+)(?:x(\d+|max))?(@island)?$")


@dataclass(frozen=True)
class TargetShape:
    """`GPUS[xPODS|xmax][@island]`: PODS pods of GPUS GPUs each (default 1 pod), each inside one NVLink island
    with @island; `xmax` asks for as many as --max-moves allows."""

    gpus: int
    pods: int | None  # None: as many as possible
    island: bool
    target: GpuNeeds | None = field(default=None, compare=False)  # the real pod's needs (model, taints...), if known

    @property
    def needs(self) -> GpuNeeds:
        return self.target or GpuNeeds(nvlink=self.island)

    def describe(self) -> str:
        size = f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
        where = ", each inside one NVLink island" if self.island and self.gpus > 1 else ""
        if self.pods is None:
            return f"as many pods of {size} as possible{where}"
        return f"{self.pods} pod{'s' if self.pods != 1 else ''} x {size}{where}"


def parse_shape(text: str, source: str = "shape") -> TargetShape:
    """`8@island`, `8x2`, `4xmax@island`; anything else an InputError naming `source` (the CLI: its flag)."""
    match = _SHAPE.match(text.strip())
    if not match:
        raise InputError(source, f"expected GPUS[xPODS|xmax][@island] (e.g. 8@island, 8x2, 4xmax@island), got {text!r}")
    gpus, pods, island = int(match[1]), match[2], bool(match[3])
    if gpus < 1 or pods == "0":
        raise InputError(source, f"GPUs and pods must be at least 1, got {text!r}")
    return TargetShape(gpus, None if pods == "max" else int(pods or 1), island)


def shape_like(
    item: Pod | Job | None, shape: TargetShape | None, tolerations: Sequence[Toleration] = ()
) -> TargetShape:
    """The target pods: like a pending pod or job (its GPUs and NVLink need unless `shape` gives them; its
    tolerations, node selector, GPU model and memory always), with `tolerations` added. Their cpu and memory are
    left out: defrag packs GPUs (explain's moves check the rest)."""
    if item is None:
        if shape is None:
            raise ValueError("no target: give a shape or a pod to be like")
        return TargetShape(
            shape.gpus, shape.pods, shape.island, GpuNeeds(nvlink=shape.island, tolerations=[*tolerations])
        )
    if item.mig_profile or item.shared:
        what = f"MIG instances ({item.mig_profile})" if item.mig_profile else "time-sliced replicas"
        raise ValueError(f"{item.name} asks for {what}: defrag makes room on whole exclusive GPUs only")
    pods, gpus = (item.pods, item.gpus_per_pod) if isinstance(item, Job) else (1, item.gpus)
    if gpus < 1:
        raise ValueError(f"{item.name} asks for no GPU: there is no room to make")
    if shape is None:
        shape = TargetShape(gpus, pods, item.nvlink and gpus > 1)
    fields = item.model_dump(include=set(GpuNeeds.model_fields), exclude={"cpu", "memory"})
    fields["nvlink"] = shape.island
    fields["tolerations"] = [*item.tolerations, *tolerations]
    return TargetShape(shape.gpus, shape.pods, shape.island, GpuNeeds.model_validate(fields))


class Move(BaseModel):
    pod: str
    gpus: int
    from_node: str
    from_gpus: list[int]
    to_node: str
    to_gpus: list[int]


class Step(BaseModel):
    """One action: `move` (evict, then re-create at once), or `evict` and later `create` to break a cycle."""

    action: Literal["move", "evict", "create"]
    pod: str
    node: str = Field(description="where it runs after the step (the node it left, for evict)")
    gpus: list[int]


class TargetPlacement(BaseModel):
    pod: str
    node: str
    gpus: list[int]
    islands: list[int]


class Greedy(BaseModel):
    """The descheduler-style answer on the same input, judged by the same validator."""

    name: str
    moves: list[Move]
    gpus_moved: int
    targets: int = Field(description="target pods that fit afterwards")
    fits: bool
    valid: bool
    problems: list[Violation] = Field(default_factory=list)


class ShapeInfo(BaseModel):
    gpus: int
    pods: int | None
    island: bool
    text: str


class DefragReport(BaseModel):
    shape: ShapeInfo
    max_moves: int | None
    feasible: bool
    reason: str | None = Field(None, description="why there is no plan (exit 1)")
    before: int = Field(description="target pods that fit before any move")
    moves: list[Move] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    targets: list[TargetPlacement] = Field(default_factory=list)
    gpus_moved: int = 0
    commands: list[str] = Field(default_factory=list)
    solve: SolveReport | None = None
    # node classes; the JSON key and its description stay as the CLI has always printed them
    kinds: int = Field(0, description="kinds of node the model was built on (identical nodes aggregated)")
    comparison: list[Greedy] = Field(default_factory=list)
