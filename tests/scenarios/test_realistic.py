"""The realistic generator: GPUs that differ, seeded, every feature the issue lists present."""

from __future__ import annotations

from gpusched.planner.optimize.plan import pending_jobs
from gpusched.scenarios.realistic import realistic_cluster, realistic_jobs, realistic_mig_cluster


def test_a_realistic_cluster_mixes_gpus_mig_time_slicing_taints_racks_and_binding_cpu():
    cluster = realistic_cluster(400, seed=3)
    again = realistic_cluster(400, seed=3)
    assert cluster.model_dump() == again.model_dump()
    blocks = [node.gpu for node in cluster.nodes if node.gpu]
    assert {b.model for b in blocks} >= {"A100-SXM4-80GB", "A100-SXM4-40GB", "H100-SXM5-80GB", "L4", "L40S", "GB200"}
    assert any(b.mig and b.mig_strategy == "mixed" for b in blocks)
    assert any(b.mig and b.mig_strategy == "single" for b in blocks)
    assert any(b.replicas > 1 for b in blocks)
    assert any(node.taints for node in cluster.nodes) and not all(node.taints for node in cluster.nodes)
    assert cluster.nvlink_domains and all(len(d.nodes) <= 18 for d in cluster.nvlink_domains)
    units = sum(len(b.mig) if b.mig else b.count * b.replicas for b in blocks)
    busy = sum(sum(m.holder is not None for m in b.mig) + len(b.busy) for b in blocks)
    assert 0.4 < busy / units < 0.6
    # cpu binds somewhere: fewer cores than 8 a GPU
    assert any(
        node.cpu_milli is not None and node.gpu and node.cpu_milli < 8000 * node.gpu.count for node in cluster.nodes
    )


def test_a_realistic_backlog_has_its_distinct_gpu_visible_shapes_gangs_and_mig():
    jobs = realistic_jobs(3000, seed=5, shapes=300)
    visible = {
        (
            j.gpus_per_pod,
            j.model,
            j.memory_gib,
            j.nvlink,
            j.shared,
            j.mig_profile,
            bool(j.tolerations),
            tuple(j.node_selector.items()),
        )
        for j in jobs
    }
    assert len(visible) >= 250  # drawn from 300
    assert all(1 <= j.gpus_per_pod <= 8 for j in jobs)
    gangs = [j for j in jobs if j.nvlink_domain]
    assert gangs and all(2 <= j.pods <= 16 for j in gangs)
    assert any(j.mig_profile for j in jobs) and any(j.shared for j in jobs)
    assert len(pending_jobs([], jobs)) == 3000


def test_a_realistic_mig_cluster_has_single_strategy_nodes_and_mig_off_gpus():
    cluster = realistic_mig_cluster(800, seed=2)
    blocks = [node.gpu for node in cluster.nodes if node.gpu]
    assert sum(b.count for b in blocks) == 800
    assert any(b.mig_strategy == "single" for b in blocks) and any(b.busy for b in blocks)
