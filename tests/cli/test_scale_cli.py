"""`gpusched scale up` end to end: the text, -o json, --emit karpenter, exit codes, bad OFFERS input."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OFFERS = str(ROOT / "examples/scale/offers.yaml")
BACKLOG = str(ROOT / "examples/scale/backlog.yaml")


def test_up_prints_the_plan_and_the_autoscalers(gpusched):
    result = gpusched("scale", "up", "crowded", BACKLOG, "--offers", OFFERS)
    assert result.exit_code == 0, result.stderr
    assert any(line.startswith("plan: OPTIMAL, 31.74 per hour for 4 new node(s)") for line in result.lines)
    rules = {words[0]: words for words in result.words if words}
    assert {"gpusched", "karpenter", "ca-least-waste", "ca-price", "ca-random"} <= set(rules)
    assert "ml/finetune -> dgx-b GPUs [3, 4, 6, 7] (existing)" in result.lines


def test_up_json_and_names(gpusched):
    report = gpusched("scale", "up", "crowded", BACKLOG, "--offers", OFFERS, "-o", "json").json()
    assert report["status"] == "OPTIMAL" and report["gap"] == 0 and report["unplaced"] == []
    names = gpusched("scale", "up", "crowded", BACKLOG, "--offers", OFFERS, "-o", "name").lines
    assert names == [f"node/{node['name']}" for node in report["new_nodes"]]


def test_up_emits_the_nodepool(gpusched, tmp_path):
    target = tmp_path / "pool.yaml"
    result = gpusched(
        "scale", "up", "crowded", BACKLOG, "--offers", OFFERS, "--emit", "karpenter", "--output-file", target
    )
    assert result.exit_code == 0, result.stderr
    pool = yaml.safe_load(target.read_text())
    assert pool["kind"] == "NodePool" and pool["apiVersion"] == "karpenter.sh/v1"
    wanted = {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert wanted["node.kubernetes.io/instance-type"] == ["g6.12xlarge", "p4d.24xlarge"]
    assert wanted["karpenter.sh/capacity-type"] == ["spot"]
    assert pool["spec"]["limits"]["nvidia.com/gpu"] == "28"


def test_up_exit_1_when_no_offering_runs_a_pod(gpusched, write):
    pending = write("p.json", {"pods": [{"name": "huge", "gpus": 16}]})
    result = gpusched("scale", "up", "crowded", pending, "--offers", OFFERS)
    assert result.exit_code == 1 and "cannot run on any offering: huge" in result.stdout


def test_up_bad_offers_exit_2_naming_file_and_field(gpusched, write):
    bad = write("o.yaml", {"instance_types": [{"name": "p4d.24xlarge", "cpu": 96, "memory": "1Ti", "prices": []}]})
    result = gpusched("scale", "up", "crowded", BACKLOG, "--offers", bad)
    assert result.exit_code == 2
    assert f"error: {bad}: instance_types[0](p4d.24xlarge).prices:" in result.stderr and not result.stdout
    unknown = write(
        "u.yaml",
        {"instance_types": [{"name": "z1", "cpu": 1, "memory": "1Gi", "prices": [{"zone": "a", "per_hour": 1}]}]},
    )
    result = gpusched("scale", "up", "crowded", BACKLOG, "--offers", unknown)
    assert (
        result.exit_code == 2 and "instance_types[0](z1).gpu: instance type z1 is not in the catalogue" in result.stderr
    )
    result = gpusched("scale", "up", "crowded", BACKLOG, "--offers", OFFERS, "--emit", "kueue")
    assert result.exit_code == 2 and "--emit: expected karpenter" in result.stderr


def test_down_prints_the_nodes_that_go(gpusched):
    pool = str(ROOT / "examples/scale/pool.yaml")
    result = gpusched("scale", "down", pool, "--offers", OFFERS)
    assert result.exit_code == 0, result.stderr
    assert result.lines[0].startswith("plan: OPTIMAL, saves 48.52 per hour removing 3 node(s)")
    assert "p4d-3 stays: ml/notebook has karpenter.sh/do-not-disrupt" in result.lines
    names = gpusched("scale", "down", pool, "--offers", OFFERS, "-o", "name").lines
    assert sorted(names) == ["node/g6-1", "node/p4d-1", "node/p4d-2"]


def test_bench_scale_rows(gpusched):
    result = gpusched("bench", "scale", "--pods", "40", "--offerings", "8", "--time-limit", "5", "-o", "json")
    assert result.exit_code == 0, result.stderr
    (row,) = result.json()["rows"]
    assert row["pending_pods"] == 40 and row["offerings"] == 8 and row["status"] in ("OPTIMAL", "FEASIBLE")
    assert all(
        cost >= row["cost_per_hour"] - 1e-9
        for rule, cost in row["baselines"].items()
        if row["baselines_unplaced"][rule] == row["unplaced"]
    )
