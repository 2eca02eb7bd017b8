"""The `bench` commands that time one planner on a generated cluster, end to end: JSON fields and the text table."""

from __future__ import annotations


def test_bench_dra_finds_the_free_island(gpusched):
    report = gpusched("bench", "dra", "--nodes", "40", "--every", "20", "--json").json()
    assert report["nodes"] == 40
    assert report["fragmented_nodes"] == 38  # one node in 20 keeps an island free
    assert report["feasible_nodes"] == 2
    assert len(report["devices"]) == 4 and all(d.startswith(report["node"] + "/") for d in report["devices"])
    assert report["node"] in gpusched("bench", "dra", "--nodes", "40").stdout


def test_bench_preempt_and_defrag_report_a_proven_plan(gpusched):
    for command, extra in (("preempt", ()), ("defrag", ("--for", "8x2@island"))):
        report = gpusched("bench", command, "--nodes", "40", *extra, "--json").json()
        assert report["nodes"] == 40 and report["running"] > 0
        assert report["feasible"] and report["status"] == "OPTIMAL"
        assert report["seconds"] >= report["solve_seconds"] >= 0
        assert "OPTIMAL" in gpusched("bench", command, "--nodes", "40", *extra).stdout


def test_bench_commands_refuse_bad_options_with_exit_2(gpusched):
    assert gpusched("bench", "defrag", "--nodes", "40", "--for", "eight").exit_code == 2
    assert gpusched("bench", "preempt", "--nodes", "40", "--time-limit", "nan").exit_code == 2


def test_bench_realistic_runs_plan_defrag_and_mig_with_processor_time(gpusched):
    """GPUs that differ: every benchmark reports its processor time beside the wall time and the limit."""
    plan = gpusched("bench", "plan", "--realistic", "--nodes", "60", "--jobs", "40", "--time-limit", "2", "--json")
    report = plan.json()
    assert report["realistic"] and report["cpu_seconds"] > 0 and report["jobs"] == 40
    defrag = gpusched("bench", "defrag", "--realistic", "--nodes", "60", "--time-limit", "2", "--json").json()
    assert defrag["cpu_seconds"] > 0 and defrag["time_limit"] == 2
    mig = gpusched("bench", "mig", "--realistic", "--gpus", "64", "--time-limit", "2", "--json").json()
    assert mig["realistic"] and set(mig["demand"]) == {"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"}


def test_bench_k8s_scores_every_feasible_node(gpusched):
    report = gpusched("bench", "k8s", "--nodes", "30", "--pods", "30", "--json").json()
    assert report["feasible_nodes"] == 30 and report["top"] >= 1
    assert "NodeResourcesFit" in report["scored_plugins"] and report["cpu_seconds"] >= 0
