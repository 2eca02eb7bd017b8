"""MIG instances from counts: labels and the device plugin say how many instances of each profile a node has, not
on which GPU or at which memory slice. A layout that fits is the best that can be said; DRA slices say exactly."""

from __future__ import annotations

from ...models.mig import MigProfile, placement_error

__all__ = ["layout", "per_gpu"]


def per_gpu(profile: MigProfile) -> int:
    """How many instances of one profile a GPU holds alone (the `all-<profile>` configurations)."""
    layout_: list[tuple[str, int]] = []
    for start in profile.starts:
        if placement_error({profile.name: profile}, layout_ + [(profile.name, start)]) is None:
            layout_.append((profile.name, start))
    return len(layout_)


def layout(
    profiles: dict[str, MigProfile], counts: dict[str, int], gpus: list[int]
) -> list[tuple[int, str, int]] | None:
    """(gpu, profile, start) for every instance counted, on the GPUs given; None when they cannot all fit.

    Largest profiles first, each on the first GPU and start that keeps the GPU valid; backtracks when stuck.
    """
    wanted = sorted(
        (name for name, count in counts.items() for _ in range(count)),
        key=lambda name: (-profiles[name].memory_slices, -profiles[name].compute, name),
    )
    placed: dict[int, list[tuple[str, int]]] = {gpu: [] for gpu in gpus}
    return _place(profiles, wanted, 0, placed)


def _place(
    profiles: dict[str, MigProfile], wanted: list[str], at: int, placed: dict[int, list[tuple[str, int]]]
) -> list[tuple[int, str, int]] | None:
    if at == len(wanted):
        return [
            (gpu, name, start) for gpu, items in placed.items() for name, start in sorted(items, key=lambda i: i[1])
        ]
    name = wanted[at]
    tried_empty = False
    for items in placed.values():
        if not items:
            if tried_empty:  # empty GPUs are interchangeable: trying one is trying all
                continue
            tried_empty = True
        for start in profiles[name].starts:
            if placement_error(profiles, items + [(name, start)]) is None:
                items.append((name, start))
                found = _place(profiles, wanted, at + 1, placed)
                if found is not None:
                    return found
                items.pop()
    return None
