"""The offline bracket: the knapsack pricing is exact, the check rejects every broken rule, and on small clusters an
exact search (CP-SAT, written here from the loaded rows) neither places more than the upper bound nor proves less
than the lower bound."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

from gpusched.bench import bracket as bracket_module
from gpusched.bench.bracket import LPFailed, PatternLP, _knapsack, bracket, lower_placement, pod_kinds
from gpusched.bench.openb import RunSpec, arrivals, prepare
from gpusched.bench.share_check import check_share_placement
from gpusched.models.cluster import Cluster
from gpusched.planner.gpushare import PodTable, SharePod, ShareState
from gpusched.scenarios.openb import NODE_FILE, OpenbNode, OpenbPod, openb_cluster, openb_dir

DATA = openb_dir()
TRACE = DATA / "openb_pod_list_default.csv"
needs_trace = pytest.mark.skipif(
    not TRACE.exists(),
    reason=f"openb trace not found at {DATA} (set $GPUSCHED_OPENB, or run `gpusched bench openb --download`)",
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(50, 999), st.floats(0.0, 100.0, allow_nan=False), st.integers(1, 4)),
        min_size=1,
        max_size=4,
    )
)
def test_knapsack_is_exact(items):
    weights, values, limits = (list(column) for column in zip(*items, strict=True))
    best, chosen = _knapsack(weights, values, limits)
    brute = max(
        sum(n * v for n, v in zip(counts, values, strict=True))
        for counts in itertools.product(*(range(limit + 1) for limit in limits))
        if sum(n * w for n, w in zip(counts, weights, strict=True)) <= 1000
    )
    assert best == pytest.approx(brute)
    assert sum(weights[i] * n for i, n in chosen.items()) <= 1000
    assert all(n <= limits[i] for i, n in chosen.items())
    assert sum(values[i] * n for i, n in chosen.items()) == pytest.approx(best)


def _cluster() -> Cluster:
    return Cluster.model_validate(
        {
            "nodes": [
                {"name": "a", "cpu": "8", "memory": "16Gi", "gpu": {"model": "T4", "count": 2, "memory_gib": 14.8}},
                {"name": "b", "cpu": "8", "memory": "16Gi", "gpu": {"model": "P100", "count": 1, "memory_gib": 15.9}},
            ]
        }
    )


def _pod(cpu: int, gpus: int, milli: int, spec: int = 0, memory: int = 1024) -> SharePod:
    return SharePod(cpu, memory, gpus, milli, spec, 0, 0)


SPECS: list[tuple[str, ...]] = [(), ("T4",)]


def test_check_accepts_a_real_placement():
    pods = [_pod(2000, 1, 600), _pod(2000, 1, 400), _pod(2000, 1, 1000), _pod(1000, 1, 500, spec=1)]
    placed = [(0, "a", (0,)), (1, "a", (0,)), (2, "b", (0,)), (3, "a", (1,))]
    assert check_share_placement(_cluster(), SPECS, pods, placed) == []


@pytest.mark.parametrize(
    ("pods", "placed", "broken"),
    [
        ([_pod(1000, 1, 600), _pod(1000, 1, 500)], [(0, "a", (0,)), (1, "a", (0,))], "GPU 0 carries 1100 milli"),
        ([_pod(1000, 1, 1000), _pod(1000, 1, 100)], [(0, "b", (0,)), (1, "b", (0,))], "GPU 0 carries 1100 milli"),
        ([_pod(6000, 1, 100), _pod(3000, 1, 100)], [(0, "a", (0,)), (1, "a", (1,))], "cpu 9000m over"),
        ([_pod(1000, 1, 100, memory=17000)], [(0, "a", (0,))], "memory 17000 MiB over"),
        ([_pod(1000, 1, 100, spec=1)], [(0, "b", (0,))], "GPU model not among ['T4']"),
        ([_pod(1000, 2, 1000)], [(0, "a", (0, 0))], "needs 2 distinct GPUs"),
        ([_pod(1000, 1, 1000)], [(0, "b", (1,))], "no GPU 1"),
        ([_pod(1000, 1, 100)], [(0, "a", (0,)), (0, "a", (1,))], "placed twice"),
        ([_pod(1000, 1, 100)], [(0, "c", (0,))], "no such node"),
        ([_pod(1000, 1, 100)], [(1, "a", (0,))], "no such arrival"),
    ],
)
def test_check_names_each_broken_rule(pods, placed, broken):
    errors = check_share_placement(_cluster(), SPECS, pods, placed)
    assert errors and broken in errors[0]


def test_pattern_lp_counts_cpu_memory_and_models():
    nodes = [OpenbNode(name="t4", cpu_milli=8000, memory_mib=1000, gpu=2, model="T4")]
    pods = [
        OpenbPod(name="a", cpu_milli=6000, num_gpu=1, gpu_milli=1000),
        OpenbPod(name="b", cpu_milli=6000, num_gpu=1, gpu_milli=1000),
        OpenbPod(name="v", cpu_milli=1000, num_gpu=1, gpu_milli=1000, models=("V100M16",)),
        OpenbPod(name="m", cpu_milli=1000, memory_mib=2000, num_gpu=1, gpu_milli=500),
    ]
    table = PodTable.of(pods)
    state = ShareState(openb_cluster(nodes), table)
    kinds = pod_kinds(table.pods)
    lp = PatternLP(state, kinds)
    upper, objective, _, converged = lp.solve()
    assert converged
    assert upper == pytest.approx(8000 / 6000 * 1000)  # cpu binds; v needs a V100, m more memory than the node has
    assert objective == pytest.approx(upper)
    placed = lower_placement(state, lp, kinds, table.pods)
    assert check_share_placement(openb_cluster(nodes), table.specs, table.pods, placed) == []
    assert sum(table.pods[index].total_milli for index, _, _ in placed) == 1000  # the second has no cpu left


STOPPED = ("GLOP", "max_number_of_iterations: 1", "GLOP stopped after one iteration")  # a solver that fails


def _lp() -> tuple[PatternLP, PodTable, ShareState, Cluster]:
    nodes = [
        OpenbNode(name=f"t4-{i}", cpu_milli=8000 + 4000 * i, memory_mib=64000, gpu=2, model="T4") for i in range(3)
    ] + [OpenbNode(name="g2", cpu_milli=32000, memory_mib=256000, gpu=8, model="G2")]
    pods = [
        OpenbPod(name=f"p{i}", cpu_milli=1000 + 700 * (i % 5), num_gpu=1 if i % 3 else 2,
                 gpu_milli=(150 + 130 * (i % 7)) if i % 3 else 1000)
        for i in range(40)
    ]  # fmt: skip
    table = PodTable.of(pods)
    cluster = openb_cluster(nodes)
    state = ShareState(cluster, table)
    return PatternLP(state, pod_kinds(table.pods)), table, state, cluster


def test_a_solver_that_fails_hands_over_to_the_next(monkeypatch):
    """GLOP stopped after one iteration reports no optimum; the LP is rebuilt on CLP, which reaches the same bound,
    and says so."""
    expected, *_ = _lp()[0].solve()
    monkeypatch.setattr(bracket_module, "LP_SOLVERS", (STOPPED, ("CLP", "", "CLP")))
    lp, table, state, cluster = _lp()
    upper, objective, _, converged = lp.solve()
    assert lp.solver_name == "CLP" and converged
    assert upper == pytest.approx(expected, rel=1e-9)
    assert objective == pytest.approx(upper, rel=1e-6)
    placed = lower_placement(state, lp, pod_kinds(table.pods), table.pods)
    assert check_share_placement(cluster, table.specs, table.pods, placed) == []


def test_the_default_chain_ends_in_a_second_solver():
    """GLOP, GLOP without presolve and scaling, then solvers that are not GLOP, every one of them available."""
    names = [name for name, _, _ in bracket_module.LP_SOLVERS]
    assert names[:2] == ["GLOP", "GLOP"] and "presolve" in bracket_module.LP_SOLVERS[1][2]
    assert "use_preprocessing: false" in bracket_module.LP_SOLVERS[1][1]
    assert {"CLP", "PDLP"} <= set(names[2:])
    for name in names:
        assert pywraplp.Solver.CreateSolver(name) is not None


def test_when_every_solver_fails_the_lp_says_which_and_why(monkeypatch):
    monkeypatch.setattr(bracket_module, "LP_SOLVERS", (STOPPED, STOPPED))
    lp, *_ = _lp()
    with pytest.raises(LPFailed, match="no LP solver reached an optimum: GLOP stopped after one iteration FEASIBLE"):
        lp.solve()


def _solve(spec: RunSpec) -> tuple[float, float]:
    """CP-SAT over every pod, node and GPU, from the loaded rows: its best placement and its proven bound on the
    offline optimum, % of GPU capacity (optimality is not needed: the first may not pass the upper bound, nor the
    lower bound the second)."""
    prepared = prepare(spec.trace, spec.nodes, spec.node_count)
    nodes = [node for node in prepared.cluster.nodes if node.gpu]
    capacity = 1000 * sum(node.gpu.count for node in nodes)  # type: ignore[union-attr]
    order = arrivals(prepared.milli, capacity, spec.ratio, spec.seed)
    pods = [prepared.table.pods[i] for i in order.tolist() if prepared.table.pods[i].gpus]
    model = cp_model.CpModel()
    on: dict[tuple[int, int], cp_model.IntVar] = {}
    uses: dict[tuple[int, int, int], cp_model.IntVar] = {}
    for p, pod in enumerate(pods):
        allowed = prepared.table.specs[pod.spec]
        for n, node in enumerate(nodes):
            count = node.gpu.count  # type: ignore[union-attr]
            if pod.gpus > count or (allowed and node.gpu.model not in allowed):  # type: ignore[union-attr]
                continue
            on[p, n] = model.NewBoolVar("")
            gpus = [uses.setdefault((p, n, g), model.NewBoolVar("")) for g in range(count)]
            model.Add(sum(gpus) == pod.gpus * on[p, n])
        model.Add(sum(v for (q, _), v in on.items() if q == p) <= 1)
    for n, node in enumerate(nodes):
        here = [(p, v) for (p, m), v in on.items() if m == n]
        model.Add(sum(pods[p].cpu * v for p, v in here) <= node.cpu_milli)
        model.Add(sum(pods[p].memory * v for p, v in here) <= (node.memory_bytes or 0) // 2**20)
        for g in range(node.gpu.count):  # type: ignore[union-attr]
            model.Add(sum(pods[p].milli * v for (p, m, h), v in uses.items() if (m, h) == (n, g)) <= 1000)
    model.Maximize(sum(pods[p].total_milli * v for (p, _), v in on.items()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.max_time_in_seconds = 10
    assert solver.Solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return 100.0 * solver.ObjectiveValue() / capacity, 100.0 * solver.BestObjectiveBound() / capacity


@needs_trace
@pytest.mark.parametrize(("node_count", "seed"), [(3, 42), (4, 44), (5, 43)])
def test_bracket_agrees_with_an_exact_search(node_count, seed):
    spec = RunSpec(trace=str(TRACE), nodes=str(DATA / NODE_FILE), node_count=node_count, policy="-", seed=seed)
    found = bracket(spec)
    placement, proven = _solve(spec)
    assert placement <= found.upper_pct + 1e-6
    assert found.lower_pct <= proven + 1e-6
    assert found.converged
    assert found.gap_pp == pytest.approx(found.upper_pct - found.lower_pct, abs=2e-4)


@needs_trace
def test_default_trace_bracket_is_tight():
    """The issue's target on the full default trace: upper minus lower at most 0.1 points."""
    spec = RunSpec(trace=str(TRACE), nodes=str(DATA / NODE_FILE), policy="-", seed=42)
    found = bracket(spec)
    assert found.converged
    assert found.lower_pct <= found.upper_pct
    assert found.gap_pp <= 0.1
