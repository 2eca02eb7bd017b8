"""MIG geometry: profiles, their slice shapes and legal start positions, per GPU family.

Every MIG-capable data-centre GPU here has 7 compute slices and 8 memory slices; a profile is keyed by its
profile ID (the shape), and only its name differs per board. Facts: shared/reference/mig.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "COMPUTE_SLICES",
    "MEMORY_SLICES",
    "MigProfile",
    "mig_family",
    "profiles_for",
    "placement_error",
    "addable_profiles",
]

COMPUTE_SLICES = 7
MEMORY_SLICES = 8


@dataclass(frozen=True)
class MigShape:
    profile_id: int
    compute: int
    memory_slices: int
    starts: tuple[int, ...]
    max_per_gpu: int
    media_extensions: bool = False


# Profile IDs 19, 20, 15, 14, 9, 5, 0 in the order of the names below.
_SHAPES = (
    MigShape(19, 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
    MigShape(20, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1, media_extensions=True),
    MigShape(15, 1, 2, (0, 2, 4, 6), 4),
    MigShape(14, 2, 2, (0, 2, 4), 3),
    MigShape(9, 3, 4, (0, 4), 2),
    MigShape(5, 4, 4, (0,), 1),
    MigShape(0, 7, 8, (0,), 1),
)

_NAMES = {
    "A100-40GB": ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100-80GB": ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-80GB": ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-NVL": ("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "H200": ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "B200": ("1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
    "GB200": ("1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
}


@dataclass(frozen=True)
class MigProfile:
    name: str
    shape: MigShape

    @property
    def compute(self) -> int:
        return self.shape.compute

    @property
    def memory_slices(self) -> int:
        return self.shape.memory_slices

    @property
    def starts(self) -> tuple[int, ...]:
        return self.shape.starts

    def slices(self, start: int) -> frozenset[int]:
        return frozenset(range(start, start + self.shape.memory_slices))

    def memory_gib(self, gpu_memory_gib: float) -> float:
        """An instance's memory: its share of the GPU's memory slices."""
        return gpu_memory_gib * self.shape.memory_slices / MEMORY_SLICES


_PROFILES = {
    family: {name: MigProfile(name, shape) for name, shape in zip(names, _SHAPES, strict=True)}
    for family, names in _NAMES.items()
}


def mig_family(model: str, memory_gib: float) -> str | None:
    """The MIG family of a GPU model name, or None when the GPU cannot be partitioned."""
    name = model.upper()
    if "GB200" in name:
        return "GB200"
    if "B200" in name:
        return "B200"
    if "H200" in name:
        return "H200"
    if "H100" in name:
        return "H100-NVL" if "NVL" in name or memory_gib > 90 else "H100-80GB"
    if "A100" in name:
        return "A100-80GB" if memory_gib > 40 else "A100-40GB"
    return None


def profiles_for(model: str, memory_gib: float) -> dict[str, MigProfile]:
    family = mig_family(model, memory_gib)
    return _PROFILES[family] if family else {}


def placement_error(profiles: dict[str, MigProfile], layout: list[tuple[str, int]]) -> str | None:
    """Why a set of (profile, start) instances cannot coexist on one GPU, or None when it can."""
    used: set[int] = set()
    compute = 0
    counts: dict[str, int] = {}
    media = 0
    for name, start in layout:
        profile = profiles.get(name)
        if profile is None:
            return f"unknown MIG profile {name!r} (known: {', '.join(profiles) or 'none'})"
        if start not in profile.starts:
            return f"{name} cannot start at memory slice {start} (legal starts: {list(profile.starts)})"
        overlap = used & profile.slices(start)
        if overlap:
            return f"{name}@{start} overlaps memory slices {sorted(overlap)} of another instance"
        used |= profile.slices(start)
        compute += profile.compute
        counts[name] = counts.get(name, 0) + 1
        media += profile.shape.media_extensions
        if counts[name] > profile.shape.max_per_gpu:
            return f"more than {profile.shape.max_per_gpu} {name} instances on one GPU"
    if compute > COMPUTE_SLICES:
        return f"instances use {compute} compute slices, a GPU has {COMPUTE_SLICES}"
    if media > 1:
        return "more than one +me instance on one GPU"
    return None


def addable_profiles(
    profiles: dict[str, MigProfile], kept: list[tuple[str, int]], allowed: list[str] | None = None
) -> list[str]:
    """Profiles that could be created next to the kept (busy) instances, in profile-table order."""
    names = [n for n in profiles if allowed is None or n in allowed]
    return [
        name
        for name in names
        if any(placement_error(profiles, kept + [(name, start)]) is None for start in profiles[name].starts)
    ]
