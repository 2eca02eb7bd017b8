"""What an import found: per node, each fact and where it came from; and what could not be known."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["Finding", "Findings", "ImportReport", "NodeImport"]

Level = Literal["info", "warning", "error"]

# Findings that concern many nodes alike are summarised in one line; {n} nodes, {names} the first few.
SUMMARIES = {
    "islands-unknown": "islands unknown for {n} node(s) ({names}): assumed none; give --topology NODE=FILE",
    "mig-layout-inferred": "MIG layout inferred from per-profile counts on {n} node(s) ({names}): positions are "
    "not published by labels; ResourceSlices of the NVIDIA DRA driver give them exactly",
    "indices-unknown": "GPU indices of running pods unknown on {n} node(s) ({names}): the API does not publish "
    "which device a pod got; assigned best-fit by island in start order",
    "cordoned": "{n} node(s) cordoned ({names}): kept, but nothing new is placed there",
    "no-gpu-memory-declared": "GPU memory declared by running pods unknown on {n} node(s) ({names}): "
    "kubectl shows none; modelled as 0 GiB",
}


class Finding(BaseModel):
    level: Level
    kind: str = Field(description="what sort of finding: findings of one kind on many nodes are summarised")
    node: str | None = None
    message: str


class NodeImport(BaseModel):
    node: str
    gpus: int
    model: str | None = None
    memory_gib: float | None = None
    islands: list[list[int]] = Field(default_factory=list)
    sharing: str = Field("", description="exclusive, time-slicing xN, mps xN, MIG mixed/single")
    holders: int = Field(0, description="pods holding GPUs or MIG instances here")
    sources: dict[str, str] = Field(default_factory=dict, description="fact -> where it came from")


class ImportReport(BaseModel):
    inputs: list[str]
    nodes: list[NodeImport]
    gpu_nodes: int
    gpus: int
    holders: int = Field(description="pods holding GPUs")
    nvlink_domains: int
    pending: list[str] = Field(description="Pending pods asking for GPUs (the dump's own workload)")
    findings: list[Finding]
    summary: list[str] = Field(description="findings, one line each, those of one kind on many nodes merged")
    output: str | None = Field(None, description="the cluster file written, if any")

    @property
    def errors(self) -> bool:
        return any(f.level == "error" for f in self.findings)


class Findings(list[Finding]):
    """The findings of one import, collected as it goes."""

    def add(self, level: Level, kind: str, message: str, node: str | None = None) -> None:
        self.append(Finding(level=level, kind=kind, node=node, message=message))

    def summary(self) -> list[str]:
        lines: list[str] = []
        grouped: dict[str, list[Finding]] = {}
        for finding in self:
            if finding.kind in SUMMARIES:
                grouped.setdefault(finding.kind, []).append(finding)
            else:
                lines.append(f"{finding.level}: {finding.node + ': ' if finding.node else ''}{finding.message}")
        for kind, found in grouped.items():
            names = [f.node or "?" for f in found]
            shown = ", ".join(names[:3]) + (f", +{len(names) - 3} more" if len(names) > 3 else "")
            lines.append(f"{found[0].level}: " + SUMMARIES[kind].format(n=len(names), names=shown))
        return lines
