"""`gpusched mig plan`: hand-worked optima, the CLI end to end, bad input, and properties against an exhaustive search."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.bench.mig_bench import bench_mig
from gpusched.models.cluster import Cluster
from gpusched.models.mig import COMPUTE_SLICES, placement_error, profiles_for
from gpusched.planner.optimize import mig as mig_module
from gpusched.planner.optimize.mig import layout_violations, plan_mig
from gpusched.planner.optimize.mig.baselines import all_balanced, first_fit
from gpusched.planner.optimize.mig.layouts import inventory, outcome, parse_demand
from gpusched.planner.optimize.mig.validate import mig_plan_violations
from gpusched.planner.optimize.solver import LevelReport, SolverConfig
from gpusched.scenarios import load_cluster

EXAMPLE = "examples/mig/inference.yaml"
A100 = ("A100-SXM4-80GB", 80)


def _node(name: str, count: int, mig: list[tuple[int, str, int, str | None]] = (), **gpu) -> dict:
    block = {"model": A100[0], "count": count, "memory_gib": A100[1], **gpu}
    block["mig"] = [{"gpu": g, "profile": p, "start": s, "holder": h} for g, p, s, h in mig]
    return {"name": name, "gpu": block}


def _plan(cluster: Cluster, demand: dict[str, int], **config):
    return plan_mig(cluster, demand, SolverConfig(**config))


# hand-worked optima


def test_free_instances_that_serve_the_demand_change_nothing(gpusched):
    result = gpusched("mig", "plan", "fragmented", "--demand", "1g.10gb=3")
    assert result.exit_code == 0
    assert "nothing to reconfigure: the free instances serve the demand" in result.stdout
    assert "mig-parted" not in result.stdout
    plan = gpusched("mig", "plan", "fragmented", "--demand", "1g.10gb=3", "--json").json()
    assert plan["outcome"] == {"served": {"1g.10gb": 3}, "met": True, "reconfigured": 0, "unused_slices": 0}
    assert plan["changes"] == [] and plan["labels"] == {}


def test_a_3g_needs_an_idle_gpu_and_4g_fills_the_rest(gpusched):
    # mig-a's busy 1g.10gb at slices 0 and 4 block both 3g.40gb starts; an idle whole GPU takes 3g@4 and 4g@0
    plan = gpusched("mig", "plan", "fragmented", "--demand", "3g.40gb=1", "--json").json()
    assert plan["solve"]["status"] == "OPTIMAL"
    assert plan["outcome"] == {"served": {"3g.40gb": 1}, "met": True, "reconfigured": 1, "unused_slices": 0}
    (change,) = plan["changes"]
    assert (change["node"], change["gpu"], change["before"]) == ("dgx-a", 6, None)
    assert [(i["profile"], i["start"]) for i in change["after"]] == [("4g.40gb", 0), ("3g.40gb", 4)]
    (name,) = plan["mig_parted"]["mig-configs"]
    assert plan["labels"] == {"dgx-a": name}
    assert plan["mig_parted"]["mig-configs"][name] == [
        {"devices": [0, 1, 2, 3, 4, 5, 7], "mig-enabled": False},
        {"devices": [6], "mig-enabled": True, "mig-devices": {"3g.40gb": 1, "4g.40gb": 1}},
    ]
    (resources,) = plan["resources"]
    assert resources["before"] == {"nvidia.com/gpu": 8}
    assert resources["mixed"] == {"nvidia.com/gpu": 7, "nvidia.com/mig-4g.40gb": 1, "nvidia.com/mig-3g.40gb": 1}
    assert resources["single"] is None and resources["single_problem"] == "profiles 3g.40gb, 4g.40gb on one node"


def test_example_fleet_keeps_busy_instances_and_beats_first_fit():
    plan = _plan(load_cluster(EXAMPLE), {"3g.40gb": 10, "1g.10gb": 14})
    assert plan.solve.optimal and plan.outcome.met
    assert (plan.outcome.reconfigured, plan.outcome.unused_slices) == (3, 1)
    rows = {row.plan: row.outcome for row in plan.comparison}
    assert not rows["first-fit"].met and rows["all-balanced"].reconfigured == 4
    for change in plan.changes:  # busy instances are in the new layout, exactly where they were
        busy = [i for i in change.before or [] if i.holder]
        assert all(i in change.after for i in busy) and change.holders == [i.holder for i in busy]


def test_the_demand_that_cannot_be_met_exits_1_with_what_can_be_served(gpusched, write):
    cluster = {"nodes": [_node("m", 1, [(0, "1g.10gb", 0, "a"), (0, "1g.10gb", 4, "b")])]}
    path = write("one.json", cluster)
    result = gpusched("mig", "plan", path, "--demand", "3g.40gb=1,2g.20gb=2")
    assert result.exit_code == 1
    assert (
        "demand cannot be met: the most served together (counted in compute slices) is 3g.40gb 0 of 1, "
        "2g.20gb 1 of 2; even alone, no plan gives more than 0 3g.40gb, 1 2g.20gb"
    ) in result.stdout
    assert gpusched("mig", "plan", path, "--demand", "3g.40gb=1", "--json").json()["outcome"]["met"] is False


def test_single_strategy_node_stays_one_profile():
    cluster = Cluster.model_validate(
        {
            "nodes": [
                _node("s", 2, [(0, "7g.80gb", 0, None), (1, "7g.80gb", 0, None)], mig_strategy="single"),
            ]
        }
    )
    plan = _plan(cluster, {"1g.10gb": 8})
    assert plan.outcome.met and plan.outcome.reconfigured == 2 and plan.outcome.unused_slices == 0
    assert {i.profile for change in plan.changes for i in change.after} == {"1g.10gb"}
    (resources,) = plan.resources
    assert resources.strategy == "single" and resources.single == {"nvidia.com/gpu": 14}


def test_allowed_profiles_limit_new_instances(gpusched, write):
    cluster = {"nodes": [_node("m", 1, mig_profiles=["1g.10gb", "7g.80gb"])]}
    path = write("allowed.json", cluster)
    result = gpusched("mig", "plan", path, "--demand", "2g.20gb=1", "--json")
    assert result.exit_code == 1 and result.json()["outcome"]["served"] == {"2g.20gb": 0}


def test_pending_pods_give_the_demand(gpusched, write):
    pods = write(
        "pods.yaml",
        yaml.safe_dump(
            {
                "pods": [
                    {"name": "chat-a", "gpus": 2, "mig_profile": "1g.10gb"},
                    {"name": "rag-a", "gpus": 1, "mig_profile": "3g.40gb"},
                    {"name": "notebook", "gpus": 1},
                ]
            }
        ),
    )
    plan = gpusched("mig", "plan", "fragmented", "--pending", pods, "--json").json()
    assert plan["demand"] == {"1g.10gb": 2, "3g.40gb": 1} and plan["outcome"]["met"]


def test_the_same_input_gives_the_same_plan_whatever_the_workers(gpusched):
    outputs = {
        gpusched("mig", "plan", EXAMPLE, "--demand", "3g.40gb=10,1g.10gb=14", "--workers", w).stdout
        for w in ("1", "2", "4")
    }
    assert len(outputs) == 1


def test_text_output_has_config_labels_and_comparison(gpusched):
    result = gpusched("mig", "plan", EXAMPLE, "--demand", "3g.40gb=10,1g.10gb=14")
    assert result.exit_code == 0
    text = result.stdout
    assert "solver OPTIMAL (proven optimal)" in text
    assert "infer-a/2: 2g.20gb@0 2g.20gb@2=embed-0 2g.20gb@4 1g.10gb@6 ->" in text
    config = yaml.safe_load(text[text.index("version: v1") : text.index("kubectl")])
    assert config["version"] == "v1" and len(config["mig-configs"]) == 2
    assert "kubectl label node train-a nvidia.com/mig.config=gpusched-" in text
    assert [line.split()[0] for line in text.splitlines()[-3:]] == ["optimum", "first-fit", "all-balanced"]
    assert "solved in" in result.stderr


def test_an_unproven_solve_says_so_with_the_gap(gpusched, monkeypatch):
    real = mig_module.solve_lexicographic

    def unproven(model, levels, config):
        solver, report = real(model, levels, config)
        first = report.levels[0]
        worse = LevelReport(
            **{**first.model_dump(), "status": "FEASIBLE", "best_bound": first.objective + 3, "gap": 0.5}
        )
        return solver, report.model_copy(update={"status": "FEASIBLE", "levels": [worse, *report.levels[1:]]})

    monkeypatch.setattr(mig_module, "solve_lexicographic", unproven)
    result = gpusched("mig", "plan", "fragmented", "--demand", "3g.40gb=1")
    assert "solver FEASIBLE (NOT proven optimal)" in result.stdout
    assert "demand served (compute slices)  FEASIBLE  3          6      50%" in result.stdout
    plan = gpusched("mig", "plan", "fragmented", "--demand", "3g.40gb=1", "--json").json()
    assert plan["solve"]["status"] == "FEASIBLE" and plan["tie_break"] is None
    unmet = gpusched("mig", "plan", "fragmented", "--demand", "3g.40gb=20")
    assert unmet.exit_code == 1 and "demand not met within the time limit, and not proven impossible" in unmet.stdout


def test_no_solution_within_the_time_limit_answers_with_first_fit(gpusched, monkeypatch):
    real = mig_module.solve_lexicographic

    def nothing(model, levels, config):
        solver, report = real(model, levels, config)
        empty = LevelReport(
            name="x", sense="maximize", status="UNKNOWN", objective=None, best_bound=None, gap=None, seconds=0.0
        )
        return solver, report.model_copy(update={"status": "UNKNOWN", "levels": [empty]})

    monkeypatch.setattr(mig_module, "solve_lexicographic", nothing)
    result = gpusched("mig", "plan", "fragmented", "--demand", "3g.40gb=1", "--time-limit", "0.5", "--json")
    report = result.json()  # no solution in time: first-fit's plan is the answer (the floor), not proven
    first_fit = next(row["outcome"] for row in report["comparison"] if row["plan"] == "first-fit")
    assert report["outcome"] == first_fit and report["solve"]["status"] == "FEASIBLE"
    assert result.exit_code == (0 if first_fit["met"] else 1)


# bad input


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--demand", "3g.40gb"], "expected PROFILE=COUNT"),
        (["--demand", "3g.40gb=four"], "expected a whole number"),
        (["--demand", "3g.40gb=0"], "at least 1"),
        (["--demand", "3g.40gb=1,3g.40gb=2"], "given twice"),
        (["--demand", ","], "no profile given"),
        (["--demand", "3g.20gb=1"], "no GPU model in the cluster has MIG profile '3g.20gb'"),
        (["--demand", "1g.10gb=1", "--time-limit", "0"], "--time-limit: must be more than 0 seconds, got 0"),
        (["--demand", "1g.10gb=1", "--time-limit", "-2"], "--time-limit: must be more than 0 seconds, got -2"),
        (["--demand", "1g.10gb=1", "--workers", "0"], "--workers: must be at least 1"),
        ([], "give exactly one of --demand"),
        (["--demand", "1g.10gb=1", "--pending", "monday"], "give exactly one of --demand"),
        (["--pending", "monday"], "no pod asks for a MIG profile"),
    ],
)
def test_bad_input_exits_2(gpusched, args, message):
    result = gpusched("mig", "plan", "fragmented", *args)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_a_pending_pod_with_an_unknown_profile_is_named(gpusched, write):
    pods = write("pods.json", {"pods": [{"name": "odd", "gpus": 1, "mig_profile": "5g.50gb"}]})
    result = gpusched("mig", "plan", "fragmented", "--pending", pods)
    assert (
        result.exit_code == 2
        and "--pending: pod odd: no GPU model in the cluster has MIG profile '5g.50gb'" in result.stderr
    )


def test_a_cluster_without_mig_capable_gpus_is_bad_input(gpusched, write):
    path = write("l4.json", {"nodes": [{"name": "l4", "gpu": {"model": "L4", "count": 2, "memory_gib": 24}}]})
    result = gpusched("mig", "plan", path, "--demand", "1g.10gb=1")
    assert result.exit_code == 2 and "no GPU in the cluster can be MIG-partitioned" in result.stderr


def test_parse_demand_keeps_order():
    assert list(parse_demand(" 3g.40gb=4, 1g.10gb=10 ")) == ["3g.40gb", "1g.10gb"]


# the validator


def test_validator_catches_what_a_broken_planner_would_do():
    cluster = load_cluster("fragmented")
    busy = [("1g.10gb", 0, "chat-0"), ("1g.10gb", 4, "chat-1")]
    ok_after = {("mig-a", 0): busy + [("1g.10gb", 1, None), ("1g.10gb", 2, None)]}
    configs = {"c": [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.10gb": 4}}]}
    claimed = ({"1g.10gb": 2}, 1, 3)  # busy instances serve no new demand
    assert mig_plan_violations(cluster, {"1g.10gb": 4}, ok_after, claimed, configs, {"mig-a": "c"}) == []
    moved = {("mig-a", 0): [("1g.10gb", 1, "chat-0"), ("1g.10gb", 4, "chat-1")]}
    assert any("not kept in place" in str(p) for p in mig_plan_violations(cluster, {}, moved, ({}, 1, 5), configs, {}))
    illegal = {("mig-a", 0): busy + [("3g.40gb", 2, None)]}
    assert any("cannot start" in str(p) for p in mig_plan_violations(cluster, {}, illegal, ({}, 1, 2), configs, {}))
    banned = {("mig-a", 0): busy + [("1g.20gb", 2, None)]}
    assert any(
        "not among the node's MIG profiles" in str(p)
        for p in mig_plan_violations(cluster, {}, banned, ({}, 1, 4), configs, {})
    )
    lying = mig_plan_violations(cluster, {"1g.10gb": 4}, ok_after, ({"1g.10gb": 4}, 1, 3), configs, {"mig-a": "c"})
    assert any("claims" in str(p) for p in lying)
    unlabelled = mig_plan_violations(cluster, {"1g.10gb": 4}, ok_after, claimed, configs, {})
    assert any("labelled with no config" in str(p) for p in unlabelled)
    busy_whole = {("dgx-a", 0): [("7g.80gb", 0, None)]}
    assert [str(v) for v in mig_plan_violations(cluster, {}, busy_whole, ({}, 1, 0), configs, {})] == [
        "dgx-a/0: a busy whole GPU cannot be repartitioned"
    ]


# properties against an exhaustive search


FAMILIES = (("A100-SXM4-80GB", 80), ("A100-SXM4-40GB", 40))


@st.composite
def small_clusters(draw):
    """One or two nodes, at most three GPUs in all, a few allowed profiles, some instances busy."""
    nodes: list[dict] = []
    total = draw(st.integers(1, 2))
    for n in range(total):
        model, memory = draw(st.sampled_from(FAMILIES))
        profiles = profiles_for(model, memory)
        names = list(profiles)
        allowed = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        single = draw(st.booleans())
        count = draw(st.integers(1, 3 - sum(node["gpu"]["count"] for node in nodes) - (total - n - 1)))
        only = draw(st.sampled_from(names))  # a single-strategy node's one profile
        mig, busy = [], []
        for gpu in range(count):
            kind = draw(st.sampled_from(["mig", "mig", "idle", "busy"]))
            if kind == "busy":
                busy.append({"gpu": gpu, "pod": f"w{n}{gpu}"})
            if kind != "mig":
                continue
            layout: list[tuple[str, int]] = []
            for name, start in draw(
                st.lists(
                    st.tuples(st.sampled_from([only] if single and draw(st.booleans()) else names), st.integers(0, 6)),
                    max_size=6,
                )
            ):
                if start in profiles[name].starts and placement_error(profiles, layout + [(name, start)]) is None:
                    layout.append((name, start))
            for name, start in layout:
                holder = f"p{n}{gpu}{start}" if draw(st.booleans()) else None
                mig.append({"gpu": gpu, "profile": name, "start": start, "holder": holder})
        block = {
            "model": model,
            "count": count,
            "memory_gib": memory,
            "mig_profiles": allowed,
            "mig": mig,
            "busy": busy,
            "mig_strategy": "single" if single else "mixed",
        }
        nodes.append({"name": f"n{n}", "gpu": block})
    cluster = Cluster.model_validate({"nodes": nodes})
    gpus = inventory(cluster)
    names = sorted({name for gpu in gpus for name in gpu.profiles}) or ["1g.10gb"]
    wanted = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    demand = {name: draw(st.integers(1, 4)) for name in wanted}
    return cluster, demand


def _all_layouts(gpu) -> list:
    """Every layout by brute force over subsets of the candidate instances (placement_error decides)."""
    candidates = sorted({(n, s) for n in gpu.allowed for s in gpu.profiles[n].starts} | set(gpu.free or ()))
    found = []

    def grow(i: int, chosen: list) -> None:
        if i == len(candidates):
            found.append(tuple(chosen))
            return
        grow(i + 1, chosen)
        if placement_error(gpu.profiles, list(gpu.kept) + chosen + [candidates[i]]) is None:
            grow(i + 1, chosen + [candidates[i]])

    grow(0, [])
    return ([None] + [layout for layout in found if layout]) if gpu.whole else found


def _exhaustive(cluster: Cluster, demand: dict[str, int]) -> tuple[int, int, int]:
    """The best (served compute slices, GPUs reconfigured, unused slices) over every combination of layouts."""
    gpus = inventory(cluster)
    weight = {name: next(g.profiles[name].compute for g in gpus if name in g.profiles) for name in demand}
    per_gpu = []
    for gpu in gpus:
        seen = {}
        for layout in _all_layouts(gpu):
            changed = gpu.free != layout if gpu.whole or layout is None else set(gpu.free) != set(layout)
            instances = list(gpu.kept) + list(layout or ())
            unused = COMPUTE_SLICES - sum(gpu.profiles[n].compute for n, _ in instances) if changed else 0
            have = Counter(n for n, _ in layout or ())
            profiles = frozenset(n for n, _ in instances)
            key = (tuple(min(have[n], c) for n, c in demand.items()), changed, unused, profiles if gpu.single else None)
            seen[key] = key
        per_gpu.append(list(seen))
    best = None
    for combo in itertools.product(*per_gpu):
        on_node: dict[str, set] = {}
        touched: set[str] = set()  # a single-strategy node left as it is may keep the mix it has
        for gpu, (_, changed, _, profiles) in zip(gpus, combo, strict=True):
            if gpu.single:
                on_node.setdefault(gpu.node, set()).update(profiles)
                if changed:
                    touched.add(gpu.node)
        if any(len(names) > 1 for node, names in on_node.items() if node in touched):
            continue
        silent = {node for node, names in on_node.items() if len(names) > 1}  # a mix: the plugin advertises none
        counted = [c for gpu, c in zip(gpus, combo, strict=True) if gpu.node not in silent]
        supply = [sum(c[0][i] for c in counted) for i in range(len(demand))]
        served = sum(weight[n] * min(d, s) for (n, d), s in zip(demand.items(), supply, strict=True))
        score = (-served, sum(c[1] for c in combo), sum(c[2] for c in combo))
        best = score if best is None else min(best, score)
    assert best is not None
    return -best[0], best[1], best[2]


def _score(plan_outcome, gpus, demand) -> tuple[int, int, int]:
    weight = {name: next(g.profiles[name].compute for g in gpus if name in g.profiles) for name in demand}
    served = sum(weight[n] * plan_outcome.served[n] for n in demand)
    return served, plan_outcome.reconfigured, plan_outcome.unused_slices


def _lexi(score: tuple[int, int, int]) -> tuple[int, int, int]:
    return (-score[0], score[1], score[2])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_clusters())
def test_optimum_equals_exhaustive_search_and_beats_the_heuristics(case):
    cluster, demand = case
    gpus = inventory(cluster)
    if not any(name in gpu.profiles for gpu in gpus for name in demand):
        return  # bad input (exit 2), tested above
    plan = _plan(cluster, demand, workers=1)
    assert plan.solve.optimal
    best = _exhaustive(cluster, demand)
    assert _score(plan.outcome, gpus, demand) == best
    assert [round(level.objective) for level in plan.solve.levels] == list(best)
    total = sum(next(g.profiles[n].compute for g in gpus if n in g.profiles) * c for n, c in demand.items())
    assert plan.outcome.met == (best[0] == total)  # infeasible exactly when the exhaustive search says so
    for name, layouts in (("first-fit", first_fit(gpus, demand)), ("all-balanced", all_balanced(gpus))):
        assert layout_violations(cluster, gpus, layouts, demand) == [], name
        assert _lexi(best) <= _lexi(_score(outcome(gpus, layouts, demand), gpus, demand)), name


def test_bench_runs_small_and_proves_optimality(gpusched):
    result = bench_mig(64, seed=3)
    assert result.status == "OPTIMAL" and result.classes <= result.gpus
    text = gpusched("bench", "mig", "--gpus", "16", "--random-layouts").stdout
    assert "mig plan on 16 GPUs" in text and "OPTIMAL" in text


def test_a_single_strategy_node_holding_mixed_instances_ends_with_one_profile_or_stays_as_it_is():
    """The input allows a single-strategy node that mixes profiles; the plan once emptied a GPU to obey the rule."""
    held = [(0, "1g.10gb+me", 0, "p"), (2, "1g.10gb", 0, None)]
    cluster = Cluster.model_validate({"nodes": [_node("n", 3, held, mig_strategy="single", mig_profiles=["1g.10gb"])]})
    plan = _plan(cluster, {"1g.10gb": 1})  # the busy +me fixes n's profile: its free 1g.10gb is advertised by none
    assert plan.solve.optimal and not plan.outcome.met and plan.outcome.served == {"1g.10gb": 0}
    free = [(0, "1g.10gb+me", 0, None), (1, "1g.10gb", 0, None)]
    cluster = Cluster.model_validate({"nodes": [_node("n", 2, free, mig_strategy="single", mig_profiles=["1g.10gb"])]})
    plan = _plan(cluster, {"1g.10gb": 2})  # the +me GPU is repartitioned, so the node ends with one profile
    assert plan.solve.optimal and plan.outcome.met and plan.outcome.reconfigured == 1


def test_a_mixed_single_strategy_node_serves_nothing_until_it_has_one_profile(gpusched, write):
    """Its device plugin advertises none of a mix: 3g.40gb=2 is met by making the node all 3g.40gb (GPU 1 changes),
    not by the two free 3g.40gb of GPU 0 as the node is."""
    mix = [(0, "3g.40gb", 0, None), (0, "3g.40gb", 4, None), (1, "1g.10gb", 0, None), (1, "2g.20gb", 2, None)]
    cluster = write("c.json", {"nodes": [_node("s", 2, mix, mig_strategy="single")]})
    plan = gpusched("mig", "plan", cluster, "--demand", "3g.40gb=2", "--json").json()
    assert plan["outcome"] == {"served": {"3g.40gb": 2}, "met": True, "reconfigured": 1, "unused_slices": 1}
    (change,) = plan["changes"]
    assert (change["gpu"], [i["profile"] for i in change["after"]]) == (1, ["3g.40gb", "3g.40gb"])
    first_fit_row = next(row for row in plan["comparison"] if row["plan"] == "first-fit")
    assert first_fit_row["outcome"]["served"] == {"3g.40gb": 0}  # it only adds instances: the mix stays silent


def test_a_busy_instance_fixes_a_single_strategy_nodes_profile():
    """A busy 3g.40gb stays, so the node stays 3g.40gb: an idle GPU beside it is never made 1g.10gb."""
    cluster = Cluster.model_validate({"nodes": [_node("s", 2, [(0, "3g.40gb", 0, "p")], mig_strategy="single")]})
    plan = _plan(cluster, {"1g.10gb": 4, "3g.40gb": 1})
    assert plan.outcome.served == {"1g.10gb": 0, "3g.40gb": 1} and plan.solve.optimal
