"""The catalogue of known GPUs and GPU servers (catalogue.yaml): topology a node's labels imply, with sources."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import Field, model_validator

from ...models.scheduling import Frozen

__all__ = ["INSTANCE_TYPE_LABELS", "Catalogue", "GpuSpec", "Server", "catalogue"]

INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


class Link(Frozen):
    gbps: float = Field(gt=0, description="one NVLink link, per direction")
    source: str


class GpuSpec(Frozen):
    model: str
    aliases: tuple[str, ...] = ()
    memory_gib: float = Field(gt=0, description="per GPU, as the vendor states it")
    architecture: str
    nvlink: bool | None = Field(None, description="False: the product has no NVLink at all; None: depends on the board")
    sources: dict[str, str]

    @model_validator(mode="after")
    def _sourced(self) -> GpuSpec:
        _require_sources(self.sources, ["memory"] + (["nvlink"] if self.nvlink is not None else []), self.model)
        return self


class Domain(Frozen):
    gpus: int = Field(gt=0, description="GPUs in one rack-scale NVLink domain")
    gbps: float = Field(gt=0, description="NVLink bandwidth per GPU, per direction, between the domain's nodes")


class Server(Frozen):
    """A server or instance type: matched by instance type, by machine name, or by GPU product and count."""

    name: str
    instance_types: tuple[str, ...] = ()
    machines: tuple[str, ...] = ()  # substrings of nvidia.com/gpu.machine, lower case, words joined by '-'
    products: tuple[str, ...] = ()  # with `count`: any node with this many GPUs of one of these products
    model: str | None = None
    count: int | None = Field(None, gt=0)
    counts: dict[str, int] = Field(default_factory=dict, description="GPU count per instance type")
    nvlink: Literal["all", "none", "unknown"]
    nvlink_gbps: float | None = Field(None, gt=0, description="per GPU per direction inside the island")
    domain: Domain | None = None
    sources: dict[str, str]

    @model_validator(mode="after")
    def _sourced(self) -> Server:
        facts = ["nvlink"] if self.nvlink != "unknown" else []
        facts += ["model"] if self.model else []
        facts += ["count"] if (self.count or self.counts) and not self.products else []
        facts += ["domain"] if self.domain else []
        _require_sources(self.sources, facts, self.name)
        if self.nvlink == "all" and self.nvlink_gbps is None:
            raise ValueError(f"{self.name}: nvlink all needs nvlink_gbps")
        return self

    def gpu_count(self, instance_type: str | None) -> int | None:
        return self.counts.get(instance_type or "", self.count)


def _require_sources(sources: dict[str, str], facts: list[str], what: str) -> None:
    missing = [fact for fact in facts if not sources.get(fact)]
    if missing:
        raise ValueError(f"{what}: no source for {', '.join(missing)}")


class Catalogue(Frozen):
    links: dict[str, Link]
    gpus: tuple[GpuSpec, ...]
    servers: tuple[Server, ...]

    def gpu(self, model: str | None) -> GpuSpec | None:
        """The GPU product by gpusched model name (case-insensitive, aliases too)."""
        if not model:
            return None
        wanted = model.lower()
        return next((g for g in self.gpus if wanted in (n.lower() for n in (g.model, *g.aliases))), None)

    def link_gbps(self, architecture: str | None) -> Link | None:
        return self.links.get((architecture or "").lower())

    def server(self, labels: dict[str, str], model: str | None, count: int | None) -> Server | None:
        """The most specific match: instance type, then machine name, then product and count."""
        instance = instance_type(labels)
        if instance:
            found = next((s for s in self.servers if instance in s.instance_types), None)
            if found:
                return found
        machine = "-".join(labels.get("nvidia.com/gpu.machine", "").lower().replace("_", " ").split())
        if machine:
            found = next((s for s in self.servers if any(m in machine for m in s.machines)), None)
            if found:
                return found
        spec = self.gpu(model)
        names = {n.lower() for n in (spec.model, *spec.aliases)} if spec else {(model or "").lower()}
        return next((s for s in self.servers if s.count == count and names & {p.lower() for p in s.products}), None)


def instance_type(labels: dict[str, str]) -> str | None:
    return next((labels[key] for key in INSTANCE_TYPE_LABELS if labels.get(key)), None)


@cache
def catalogue() -> Catalogue:
    text = (resources.files(__package__) / "catalogue.yaml").read_text(encoding="utf-8")
    return Catalogue.model_validate(yaml.safe_load(text))
