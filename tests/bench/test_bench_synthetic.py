"""`bench synthetic`: generated clusters (MIG nodes included), every heuristic against the proven optimum."""

from __future__ import annotations

from gpusched.scenarios.synthetic import synthetic_cluster, synthetic_workload


def test_generator_mixes_node_kinds_and_keeps_the_default():
    assert synthetic_cluster(30, 5, 0.3) == synthetic_cluster(30, 5, 0.3, {"dgx": 5, "pcie": 3, "l4": 2})
    mixed = synthetic_cluster(40, 5, 0.5, {"mig": 1, "l4": 1})
    kinds = {node.name.split("-")[0] for node in mixed.nodes}
    assert kinds == {"mig", "l4"}
    mig = next(node for node in mixed.nodes if node.name.startswith("mig"))
    assert len(mig.gpu.mig) == 3 * mig.gpu.count and any(i.holder for n in mixed.nodes for i in n.gpu.mig)
    jobs = synthetic_workload(200, 5)
    kinds = {job.name.rsplit("-", 1)[0] for job in jobs}
    assert kinds == {"notebook", "mig-notebook", "inference", "mig-inference", "training"}
    assert all(job.pods > 0 and (job.nvlink or job.gpus_per_pod == 1) for job in jobs)


def test_bad_mix_is_bad_input(gpusched):
    result = gpusched("bench", "synthetic", "--nodes", "10", "--mix", "dgx=1,tpu=2")
    assert result.exit_code == 2 and "node mix" in result.stderr


def test_heuristics_never_beat_the_optimum(gpusched, tmp_path):
    result = gpusched(
        "bench",
        "synthetic",
        "--nodes",
        "20,60",
        "--time-limit",
        "20",
        "--workers",
        "1",
        "--output-dir",
        tmp_path,
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    rows = result.json()["rows"]
    assert [row["nodes"] for row in rows] == [20, 60]
    for row in rows:
        assert row["status"] == "OPTIMAL"
        best = row["optimum"]
        assert len(row["heuristics"]) == 6
        upper = row["upper_weighted_gpus"]
        assert best["weighted_gpus"] <= upper + 1e-9
        assert row["gap_pct"] == round(100 * (upper - best["weighted_gpus"]) / max(1, upper), 2)
        for h in row["heuristics"]:
            assert h["weighted_gpus"] <= best["weighted_gpus"]
            assert h["to_upper_pct"] == round(100 * (upper - h["weighted_gpus"]) / max(1, upper), 2)
            assert h["gpus_placed_pct"] == round(100 * h["gpus_placed"] / max(1, best["gpus_placed"]), 2)
    text = gpusched("bench", "synthetic", "--nodes", "20", "--time-limit", "20", "--workers", "1", "--no-timing")
    first = rows[0]
    assert text.lines[0] == (
        f"20 nodes, {first['gpus']} GPUs, {first['jobs']} jobs: optimum OPTIMAL; priority-weighted GPUs between "
        f"{first['optimum']['weighted_gpus']} (validated plan) and {first['upper_weighted_gpus']:g} (CP-SAT bound)"
    )
    assert text.words[2][:2] == ["optimum", str(first["optimum"]["gpus_placed"])]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synthetic.csv", "synthetic.json", "synthetic.png"]
