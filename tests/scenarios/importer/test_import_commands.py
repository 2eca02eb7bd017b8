"""A kubectl dump directory is a cluster like any other: `place`, `frag`, `plan` and `allreduce` take it directly,
its Pending GPU pods as the default workload; rack-scale NVLink domains shape the all-reduce bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusched.models.cluster import Cluster
from gpusched.models.graph import build_graph, gpu_id, ring_gbps
from gpusched.scenarios import load_cluster, load_pending, load_pods

DUMP = str(Path(__file__).resolve().parents[2] / "data" / "import")


def test_place_takes_the_dump_and_its_pending_pods(gpusched):
    result = gpusched("place", DUMP)
    assert result.exit_code == 1  # the 8-GPU pretraining pod fits nowhere
    lines = {line.split()[0]: line for line in result.lines if line.startswith(("ml/", "serve/"))}
    assert lines["ml/llm-pretrain-1"].startswith("ml/llm-pretrain-1 Pending 0/12 nodes are available")
    assert lines["ml/finetune-13b"] == "ml/finetune-13b -> gb200-tray-2 nvidia.com/gpu GPUs [0, 1, 2, 3] islands [0]"
    assert lines["serve/asr-1"].startswith("serve/asr-1 -> h100-mig-1 nvidia.com/mig-1g.10gb")
    assert lines["serve/chat-2"].startswith("serve/chat-2 -> g6e-ts-1 nvidia.com/gpu")


def test_frag_counts_the_free_gpus_of_the_imported_cluster(gpusched):
    result = gpusched("frag", DUMP, "--json")
    assert result.exit_code == 0
    report = result.json()
    # dgx 2 + p4d 6 + tray-2 4 + traverse 2 + dra 2 (GPU 1 claimed, GPU 3 MIG) + g6 1 + rtx 2 + p100 1
    assert report["free"] == 20
    assert {n["node"]: n["free"] for n in report["nodes"]}["dra-a100-1"] == [0, 2]


def test_plan_places_the_dumps_pending_pods_and_proves_it(gpusched):
    result = gpusched("plan", DUMP, "--json", "--time-limit", "20")
    report = result.json()
    assert report["solve"]["levels"][0]["status"] == "OPTIMAL"
    assert report["unplaced"] == ["ml/llm-pretrain-1"] and result.exit_code == 1
    placed = {a["pod"]: a["node"] for a in report["assignments"]}
    assert placed["serve/asr-1"] == "h100-mig-1" and placed["serve/chat-2"] == "g6e-ts-1"


def test_every_loader_reads_a_dump_directory():
    assert len(load_cluster(DUMP).nodes) == 12
    assert [p.name for p in load_pods(DUMP).pods] == [p.name for p in load_pending(DUMP)[0].pods]


def test_a_ring_across_trays_of_one_nvlink_domain_runs_at_nvlink_speed():
    graph = build_graph(load_cluster(DUMP))
    trays = [gpu_id("gb200-tray-1", i) for i in range(4)] + [gpu_id("gb200-tray-2", i) for i in range(4)]
    assert ring_gbps(graph, trays) == (900, "nvlink")
    across = [gpu_id("dgx-h100-1", 6), gpu_id("dgx-h100-1", 7), gpu_id("p4d-1", 2), gpu_id("p4d-1", 3)]
    assert ring_gbps(graph, across) == (25, "network")


def test_allreduce_command_reports_the_domain(gpusched):
    result = gpusched("allreduce", DUMP, "gb200-tray-1:0-3+gb200-tray-2:0-3", "dgx-h100-1:6,7+p4d-1:2,3")
    assert result.lines == [
        "gb200-tray-1:0-3+gb200-tray-2:0-3: all-reduce of 14 GB over 8 GPUs: 0.027 s per step (slowest link nvlink 900 GB/s)",
        "dgx-h100-1:6-7+p4d-1:2-3: all-reduce of 14 GB over 4 GPUs: 0.84 s per step (slowest link network 25 GB/s)",
    ]


def _cluster(domains):
    gpu = {"model": "GB200", "count": 4, "memory_gib": 186, "islands": [[0, 1, 2, 3]], "nvlink_gbps": 900}
    nodes = [{"name": n, "gpu": gpu} for n in ("a", "b", "c")] + [{"name": "cpu"}]
    return Cluster.model_validate({"nodes": nodes, "nvlink_domains": domains})


def test_domain_members_must_be_gpu_nodes_in_one_domain_only():
    assert _cluster([{"name": "rack", "nodes": ["a", "b"], "gbps": 900}]).nvlink_domains[0].nodes == ["a", "b"]
    with pytest.raises(ValueError, match="names 'cpu', which is not a node with GPUs"):
        _cluster([{"name": "rack", "nodes": ["a", "cpu"], "gbps": 900}])
    with pytest.raises(ValueError, match="node 'b' is in NVLink domains r1 and r2"):
        _cluster([{"name": "r1", "nodes": ["a", "b"], "gbps": 900}, {"name": "r2", "nodes": ["b", "c"], "gbps": 900}])


def test_islands_of_one_inside_a_domain_are_on_the_fabric():
    cluster = Cluster.model_validate({"nodes": [
        {"name": n, "gpu": {"model": "GB200", "count": 2, "memory_gib": 186}} for n in ("a", "b")
    ], "nvlink_domains": [{"name": "rack", "nodes": ["a", "b"], "gbps": 900}]})  # fmt: skip
    assert ring_gbps(build_graph(cluster), [gpu_id("a", 0), gpu_id("a", 1), gpu_id("b", 0)]) == (300, "nvlink")
