"""`nvidia-smi mig -lgi` and `nvidia-smi mig -lci` captured on a node: the MIG instances that exist, where they sit.

Formats, as NVIDIA's tool prints them (a box of `|` rows under a title row):
- `-lgi` ("GPU instances:"): one row per GPU instance, `GPU  Name  Profile-ID  Instance-ID  Start:Size`, e.g.
  `|   0  MIG 3g.40gb    9    2    4:4   |`. The placement start is the first memory slice: what gpusched's `start`
  is, so a layout is read exactly instead of being inferred from the device plugin's counts.
- `-lci` ("Compute instances:"): one row per compute instance, `GPU  GI-ID  Name  Profile-ID  CI-ID  Start:Size`.
  gpusched models a GPU instance whole: a GPU instance split into several compute instances is reported, not
  modelled.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ...errors import InputError
from ...models.mig import MigProfile, placement_error

__all__ = [
    "MigComputeInstance", "MigGpuInstance", "SmiComputeInstances", "SmiGpuInstances",
    "is_mig_listing", "listed_layout", "parse_mig_listing", "split_instances",
]  # fmt: skip

_GI_ROW = re.compile(r"^\|?\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|?$")
_CI_ROW = re.compile(r"^\|?\s*(\d+)\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|?$")
GPU_INSTANCES = "GPU instances:"
COMPUTE_INSTANCES = "Compute instances:"


@dataclass(frozen=True)
class MigGpuInstance:
    gpu: int
    profile: str  # as gpusched names it: 3g.40gb, 1g.10gb+me
    instance: int  # the GPU instance ID
    start: int
    size: int


@dataclass(frozen=True)
class SmiGpuInstances:
    """`nvidia-smi mig -lgi`: the GPU instances of one node."""

    source: str
    instances: tuple[MigGpuInstance, ...]


@dataclass(frozen=True)
class MigComputeInstance:
    gpu: int
    gpu_instance: int
    profile: str
    instance: int


@dataclass(frozen=True)
class SmiComputeInstances:
    """`nvidia-smi mig -lci`: the compute instances of one node."""

    source: str
    instances: tuple[MigComputeInstance, ...]


def parse_mig_listing(text: str, source: str) -> SmiGpuInstances | SmiComputeInstances:
    """Either listing, told apart by its title row; a row that is neither a border nor an instance is an error."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    compute = any(COMPUTE_INSTANCES in line for line in lines)
    pattern = _CI_ROW if compute else _GI_ROW
    started, rows = False, []
    for number, line in enumerate(lines, 1):
        if line.startswith("|=") or line.startswith("+="):
            started = True
            continue
        if not started or line.startswith("+-") or line.startswith("+"):
            continue
        if "No MIG-enabled devices found" in line or "No GPU instances found" in line:
            continue
        match = pattern.match(line)
        if match is None:
            what = "nvidia-smi mig -lci" if compute else "nvidia-smi mig -lgi"
            raise InputError(source, f"line {number}: not a row of `{what}`: {line[:80]!r}")
        rows.append(match.groups())
    if not started:
        raise InputError(source, "not `nvidia-smi mig -lgi` or `-lci` output: no `|====` row under the title")
    if compute:
        return SmiComputeInstances(
            source, tuple(MigComputeInstance(int(g), int(gi), p, int(ci)) for g, gi, p, _, ci, _, _ in rows)
        )
    return SmiGpuInstances(
        source, tuple(MigGpuInstance(int(g), p, int(gi), int(start), int(size)) for g, p, _, gi, start, size in rows)
    )


def is_mig_listing(text: str) -> bool:
    return GPU_INSTANCES in text or COMPUTE_INSTANCES in text


def listed_layout(
    listing: SmiGpuInstances, profiles: dict[str, MigProfile], counts: dict[str, int], gpus: list[int]
) -> tuple[list[tuple[int, str, int]] | None, str]:
    """(gpu, profile, start) of every listed instance, or None and why it cannot be the node's layout: a GPU that
    is not one of its MIG GPUs, instances that cannot coexist, or other counts than the node advertises."""
    per_gpu: dict[int, list[tuple[str, int]]] = {}
    for item in listing.instances:
        per_gpu.setdefault(item.gpu, []).append((item.profile, item.start))
    for gpu, instances in sorted(per_gpu.items()):
        if gpu not in gpus:
            return None, f"GPU {gpu} is not one of the node's MIG GPUs {gpus}"
        error = placement_error(profiles, instances)
        if error:
            return None, f"GPU {gpu}: {error}"
    found = dict(sorted(Counter(item.profile for item in listing.instances).items()))
    if found != dict(sorted(counts.items())):
        return None, f"lists {found}, the node advertises {counts}"
    ordered = sorted(listing.instances, key=lambda item: (item.gpu, item.start))
    return [(item.gpu, item.profile, item.start) for item in ordered], ""


def split_instances(listing: SmiComputeInstances) -> list[str]:
    """A sentence for each GPU instance split into several compute instances (gpusched models it whole)."""
    parts: dict[tuple[int, int], list[str]] = {}
    for item in listing.instances:
        parts.setdefault((item.gpu, item.gpu_instance), []).append(item.profile)
    return [
        f"GPU {gpu} GPU instance {instance} is split into {len(names)} compute instances ({', '.join(names)}; "
        "nvidia-smi mig -lci): not modelled, the GPU instance is one device"
        for (gpu, instance), names in sorted(parts.items())
        if len(names) > 1
    ]
