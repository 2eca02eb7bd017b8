"""MIG geometry per GPU family, the topology graph, and the all-reduce bound."""

from __future__ import annotations

import pytest

from gpusched.models.graph import allreduce_seconds, build_graph, gpu_id, ring_gbps
from gpusched.models.mig import (
    addable_profiles,
    mig_family,
    placement_error,
    profiles_for,
)
from gpusched.scenarios import load_cluster


@pytest.mark.parametrize(
    ("model", "memory", "family", "full"),
    [
        ("A100-SXM4-40GB", 40, "A100-40GB", "7g.40gb"),
        ("A100-PCIE-80GB", 80, "A100-80GB", "7g.80gb"),
        ("H100-SXM5-80GB", 80, "H100-80GB", "7g.80gb"),
        ("H100-NVL", 94, "H100-NVL", "7g.94gb"),
        ("H200-SXM-141GB", 141, "H200", "7g.141gb"),
        ("B200", 180, "B200", "7g.180gb"),
        ("GB200", 186, "GB200", "7g.186gb"),
    ],
)
def test_families_and_names(model, memory, family, full):
    assert mig_family(model, memory) == family
    profiles = profiles_for(model, memory)
    assert list(profiles)[-1] == full and len(profiles) == 7


def test_gpus_without_mig():
    assert mig_family("L4", 24) is None and profiles_for("L40S", 48) == {}


A100 = profiles_for("A100-SXM4-80GB", 80)


def test_a_free_slice_is_not_a_free_instance():
    # two busy 1g.10gb at slices 0 and 4 leave six memory slices and five compute slices, and no 3g.40gb
    kept = [("1g.10gb", 0), ("1g.10gb", 4)]
    assert placement_error(A100, kept + [("3g.40gb", 0)]) is not None
    assert placement_error(A100, kept + [("3g.40gb", 4)]) is not None
    assert addable_profiles(A100, kept) == ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb"]
    assert addable_profiles(A100, kept, allowed=["1g.10gb", "2g.20gb", "3g.40gb"]) == ["1g.10gb", "2g.20gb"]


@pytest.mark.parametrize(
    ("layout", "error"),
    [
        ([("1g.10gb", 7)], "cannot start at memory slice 7"),
        ([("4g.40gb", 0), ("3g.40gb", 4)], None),  # 4g + 3g fill all seven compute slices
        ([("7g.80gb", 0), ("1g.10gb", 0)], "overlaps"),
        ([("1g.10gb+me", 0), ("1g.10gb+me", 1)], "more than 1 1g.10gb+me"),
        ([("3g.40gb", 0), ("2g.20gb", 4), ("1g.20gb", 6), ("1g.10gb", 7)], "cannot start at memory slice 7"),
        ([("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4), ("1g.20gb", 6)], None),
        ([("3g.40gb", 0), ("3g.40gb", 4), ("1g.10gb", 7)], "cannot start"),
        ([("1g.10gb", s) for s in range(7)] + [("1g.10gb", 6)], "overlaps"),
    ],
)
def test_placement_rules(layout, error):
    found = placement_error(A100, layout)
    assert (found is None) if error is None else (error in found)


def test_graph_has_the_hierarchy_and_bandwidths():
    graph = build_graph(load_cluster("monday"))
    kinds = {data["kind"] for _, data in graph.nodes(data=True)}
    assert kinds == {"cluster", "node", "island", "gpu", "mig"}
    assert graph.nodes[("island", "pcie-a", 3)]["size"] == 2
    assert ring_gbps(graph, [gpu_id("pcie-a", 0), gpu_id("pcie-a", 1)]) == (300.0, "nvlink")
    assert ring_gbps(graph, [gpu_id("pcie-a", 0), gpu_id("pcie-a", 2)]) == (32.0, "pcie")
    assert ring_gbps(graph, [gpu_id("l4-a", 0), gpu_id("l4-a", 1)]) == (32.0, "pcie")  # islands of one
    assert ring_gbps(graph, [gpu_id("dgx-a", 0), gpu_id("dgx-b", 0)]) == (25.0, "network")


def test_allreduce_bound():
    assert round(allreduce_seconds(8, 14, 300), 3) == 0.082
    assert round(allreduce_seconds(2, 14, 32), 2) == 0.44
    assert allreduce_seconds(1, 14, 300) == 0.0
