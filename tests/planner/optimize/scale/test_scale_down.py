"""scale down: savings within budgets and do-not-disrupt, moves that validate, never worse than the autoscalers."""

from __future__ import annotations

from gpusched.models.workload import GpuNeeds
from gpusched.planner.optimize.scale import scale_down
from gpusched.planner.optimize.solver import SolverConfig
from gpusched.scenarios import load_cluster
from gpusched.scenarios.offers import load_offers

CONFIG = SolverConfig(time_limit=5, workers=1)
POOL = "examples/scale/pool.yaml"
OFFERS = "examples/scale/offers.yaml"


def test_the_pool_empties_onto_the_node_that_must_stay():
    report = scale_down(load_cluster(POOL), load_offers(OFFERS), CONFIG)
    assert report.status == "OPTIMAL" and report.gap == 0 and abs(report.saves_per_hour - 48.52) < 1e-9
    assert sorted(r.node for r in report.removals) == ["g6-1", "p4d-1", "p4d-2"]
    assert report.kept_by_rule == {"p4d-3": "ml/notebook has karpenter.sh/do-not-disrupt"}
    assert {m.node for m in report.moves} == {"p4d-3"}
    for other in report.baselines:
        assert other.saves_per_hour <= report.saves_per_hour + 1e-9


def test_budgets_and_gangs_keep_nodes():
    cluster = load_cluster(POOL)
    pinned = cluster.model_copy(
        update={"disruption_budgets": [b.model_copy(update={"max_unavailable": 0}) for b in cluster.disruption_budgets]}
    )
    report = scale_down(pinned, load_offers(OFFERS), CONFIG)
    assert "p4d-2" in report.kept_by_rule and "allows no eviction" in report.kept_by_rule["p4d-2"]
    assert "p4d-2" not in {r.node for r in report.removals}
    gang = {name: GpuNeeds(labels={"gpusched.io/gang": "g"}) for name in ("ml/a", "ml/c")}
    spread = cluster.model_copy(update={"running": {**cluster.running, **gang}})
    report = scale_down(spread, load_offers(OFFERS), CONFIG)
    assert {"p4d-1", "p4d-2"} <= set(report.kept_by_rule) and "gang spans nodes" in report.kept_by_rule["p4d-1"]


def test_without_prices_nodes_still_go():
    report = scale_down(load_cluster("fragmented"), None, CONFIG)
    assert report.removals and report.bound_per_hour is None and report.status == "FEASIBLE"
    assert all(len(other.removed) <= len(report.removals) for other in report.baselines)
