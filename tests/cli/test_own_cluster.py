"""Describing your own cluster: `gpusched init`'s template, a typo's nearest field, an unknown GPU model, a job
without a duration where no clock runs, `place` on a file of only nodes."""

from __future__ import annotations

import yaml

from gpusched.models.reference import template
from gpusched.scenarios import load_scenario


def test_init_writes_a_commented_template_that_every_command_reads(gpusched, tmp_path):
    path = tmp_path / "cluster.yaml"
    written = gpusched("init", path)
    assert written.exit_code == 0 and path.read_text() == template()
    assert "memory_gib: 80  # memory per GPU" in template() and "priority: 10  # as a pod's spec.priority" in template()
    scenario = load_scenario(str(path))
    assert scenario.cluster.running and scenario.cluster.disruption_budgets and scenario.pods and scenario.jobs
    for args in (["frag", path], ["map", path], ["place", path], ["plan", path], ["gang", path],
                 ["explain", "ml/train-8", "-f", path], ["preempt", "ml/train-8", "-f", path]):  # fmt: skip
        result = gpusched(*args)
        assert result.exit_code in (0, 1), (args, result.stderr)
    again = gpusched("init", path)
    assert again.exit_code == 2 and "exists: give another FILE, or --force to replace it" in again.stderr
    assert gpusched("init", path, "--force").exit_code == 0
    assert gpusched("init").stdout == template()


def test_a_typo_names_the_field_it_meant(gpusched, write):
    """Before: `Extra inputs are not permitted`, no hint."""
    cluster = write("c.yaml", "nodes:\n- name: a\n  gpu: {model: A100-SXM4-80GB, count: 8, memroy_gib: 80}\n")
    result = gpusched("frag", cluster)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: {cluster}: nodes[0](a).gpu.memroy_gib: unknown field (did you mean memory_gib?)"
    )
    pods = write("p.yaml", "pods: [{name: a, gpu: 2}]\n")
    assert "pods[0](a).gpu: unknown field (did you mean gpus?)" in gpusched("place", "monday", "--pods", pods).stderr
    running = write("r.yaml", yaml.safe_dump({"nodes": [], "running": {"x": {"prioity": 1}}}))
    assert "running.x.prioity: unknown field (did you mean priority?)" in gpusched("frag", running).stderr
    far = write("f.yaml", "nodes: []\nzzz: 1\n")
    assert "zzz: unknown field (known: nodes, network_gbps, running" in gpusched("frag", far).stderr


def test_an_unknown_gpu_model_is_a_warning_listing_the_known_ones(gpusched, write):
    """Before: accepted silently, so every pod asking for the real model stayed Pending without a word."""
    cluster = write("c.yaml", "nodes:\n- name: a\n  gpu: {model: A100-SXM-80GB, count: 8, memory_gib: 80}\n")
    result = gpusched("frag", cluster)
    assert result.exit_code == 0 and result.stdout
    assert f"warning: {cluster}: nodes[0](a).gpu.model: unknown GPU model 'A100-SXM-80GB'" in result.stderr
    assert "known: A100-SXM4-40GB, A100-SXM4-80GB" in result.stderr
    assert "warning" not in gpusched("frag", "monday").stderr  # the built-in scenarios name known models


def test_a_job_needs_a_duration_only_where_a_clock_runs(gpusched, write):
    """Before: `duration` was required even for preempt and plan."""
    cluster = {"nodes": [{"name": "a", "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80}}]}
    scenario = write(
        "s.yaml", yaml.safe_dump({"cluster": cluster, "jobs": [{"name": "j", "pods": 1, "gpus_per_pod": 4}]})
    )
    assert gpusched("plan", scenario).exit_code == 0
    assert gpusched("preempt", "j", "-f", scenario).exit_code == 0
    clocked = gpusched("gang", scenario)
    assert (
        clocked.exit_code == 2 and "the gang simulator runs a clock: give a duration (seconds) to j" in clocked.stderr
    )


def test_place_takes_a_file_of_only_nodes(gpusched, write):
    """Before: `place FILE` refused a file with only `nodes:`, which frag, map and mig plan read."""
    cluster = write("c.yaml", "nodes:\n- name: a\n  gpu: {model: A100-SXM4-80GB, count: 8, memory_gib: 80}\n")
    result = gpusched("place", cluster)
    assert result.exit_code == 0 and result.lines[0].startswith("fragmentation of exclusive GPUs: 8 free")
