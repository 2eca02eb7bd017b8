"""Every output of the seed's "Step 10: run it", reproduced by the real CLI from the built-in scenarios."""

from __future__ import annotations


def test_spread_strands_the_eight_gpu_job(gpusched):
    result = gpusched("place", "monday", "--policy", "spread")
    assert result.exit_code == 1  # train-8 is Pending
    assert result.lines[:3] == [
        "notebook-0 -> dgx-a nvidia.com/gpu GPUs [0] islands [0]",
        "notebook-1 -> dgx-b nvidia.com/gpu GPUs [0] islands [0]",
        "notebook-2 -> pcie-a nvidia.com/gpu GPUs [0] islands [0]",
    ]
    assert (
        "train-8 Pending 0/5 nodes are available: 1 GPU model is not A100-SXM4-80GB, 1 node is time-sliced, "
        "3 Insufficient nvidia.com/gpu." in result.lines
    )
    header = "fragmentation of exclusive GPUs: 15 free; largest block on one node 6, inside one NVLink island 5"
    at = result.lines.index(header)
    assert result.words[at + 1 : at + 6] == [
        ["size", "pods(count)", "pods(island)", "stranded"],
        ["1", "15", "15", "0", "(0%)"],
        ["2", "7", "7", "1", "(6.7%)"],
        ["4", "3", "2", "3", "(20%)"],
        ["8", "0", "0", "15", "(100%)"],
    ]


def test_binpack_fills_dgx_a_and_train_8_gets_dgx_b(gpusched):
    result = gpusched("place", "monday", "--json")
    placed = {r["pod"]: r["node"] for r in result.json()["results"]}
    assert all(placed[f"notebook-{i}"] == "dgx-a" for i in range(6))
    assert placed["finetune-2"] == "dgx-a"
    assert placed["train-8"] == "dgx-b"
    assert result.exit_code == 0


def test_topology_keeps_a_seven_gpu_island_whole(gpusched):
    report = gpusched("place", "monday", "--policy", "topology", "--json").json()
    placed = {r["pod"]: r["node"] for r in report["results"]}
    assert all(placed[f"notebook-{i}"] == "pcie-a" for i in range(6))
    assert report["fragmentation"]["largest_island"] == 7
    assert {"node": "dgx-b", "free": [1, 2, 3, 4, 5, 6, 7], "islands": [[1, 2, 3, 4, 5, 6, 7]]} in report[
        "fragmentation"
    ]["nodes"]


def test_extended_view_lists_the_runtime_consequences(gpusched):
    result = gpusched("place", "monday", "--view", "extended")
    lines = result.lines
    at = lines.index("embed -> l4-a nvidia.com/gpu GPUs [0] islands [0]")
    assert lines[at + 1 : at + 6] == [
        "! needs 40 GiB per GPU, L4 has 24 GiB: out of memory when the weights load",
        "! lands on a time-sliced replica: shares a physical GPU, no memory or fault isolation",
        "! GPU 0 memory oversubscribed: 40 of 24 GiB declared",
        "chat-0 -> l4-a nvidia.com/gpu GPUs [0] islands [0]",
        "! GPU 0 memory oversubscribed: 50 of 24 GiB declared",
    ]


def test_fragmented_cluster_table_and_mig_line(gpusched):
    result = gpusched("frag", "fragmented")
    assert result.exit_code == 0
    assert (
        result.lines[0]
        == "fragmentation of exclusive GPUs: 8 free; largest block on one node 4, inside one NVLink island 2"
    )
    assert result.words[1:6] == [
        ["size", "pods(count)", "pods(island)", "stranded"],
        ["1", "8", "8", "0", "(0%)"],
        ["2", "4", "2", "0", "(0%)"],
        ["4", "1", "0", "4", "(50%)"],
        ["8", "0", "0", "8", "(100%)"],
    ]
    assert (
        "MIG mig-a GPU 0: used 1g.10gb@0=chat-0, 1g.10gb@4=chat-1; free instances 1g.10gb x3, 2g.20gb x1; "
        "a repartition could add 1g.10gb, 2g.20gb" in result.lines
    )


def test_gang_pod_mode_deadlocks_at_1200_holding_16_gpus(gpusched):
    result = gpusched("gang", "training", "--mode", "pod")
    assert result.exit_code == 1
    assert "deadlock at t=1200: 16 GPUs held by llm-a (3/4 pods), llm-b (1/4 pods); nothing running" in result.lines
    report = gpusched("gang", "training", "--mode", "pod", "--json").json()
    assert report["deadlock"]["gpus_held"] == 16 and report["deadlock"]["time"] == 1200


def test_gang_mode_runs_llm_a_then_llm_b_with_nothing_held_idle(gpusched):
    result = gpusched("gang", "training", "--mode", "gang")
    assert result.exit_code == 0
    rows = {words[0]: words[1:] for words in result.words[1:4]}
    assert rows["llm-a"][1:3] == ["1200", "4800"]
    assert rows["llm-b"][1:3] == ["4800", "6600"]
    assert "makespan 6600 s" in result.lines
    assert "GPU-hours held idle by partial gangs: 0.00" in result.lines


def test_gang_timeout_same_makespan_but_2_64_gpu_hours_idle(gpusched):
    result = gpusched("gang", "training", "--mode", "gang", "--timeout", "300")
    assert result.exit_code == 0
    assert "makespan 6600 s" in result.lines
    assert "GPU-hours held idle by partial gangs: 2.64" in result.lines


def test_allreduce_figures(gpusched):
    placed = gpusched("place", "monday", "--json").json()
    train = next(r for r in placed["results"] if r["pod"] == "train-8")
    assert round(train["allreduce"]["seconds"], 3) == 0.082
    result = gpusched("allreduce", "monday", "dgx-b:0-7", "pcie-a:0,2")
    assert result.exit_code == 0
    assert result.lines[0].endswith("0.082 s per step (slowest link nvlink 300 GB/s)")
    assert result.lines[1].endswith("0.44 s per step (slowest link pcie 32 GB/s)")
