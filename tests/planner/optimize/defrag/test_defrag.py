"""defrag: hand-worked optima, ordered valid steps, budgets, bad input, and exhaustive-search properties."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.errors import InputError
from gpusched.models.cluster import Cluster
from gpusched.models.scheduling import Toleration
from gpusched.planner.optimize.defrag import Move, defrag, parse_shape, shape_like
from gpusched.planner.optimize.defrag.extract import Unorderable, order_moves, schedule
from gpusched.planner.optimize.defrag.world import build_world
from gpusched.planner.optimize.disrupt import Budgets, without
from gpusched.planner.optimize.solver import SolverConfig
from gpusched.planner.validate import Assignment, violations


def _node(name: str, count: int, islands: list[list[int]], busy: dict[int, str], **extra) -> dict:
    gpu = {
        "model": "A100-SXM4-80GB",
        "count": count,
        "memory_gib": 80,
        "islands": islands,
        "busy": [{"gpu": g, "pod": pod} for g, pod in busy.items()],
    } | extra.pop("gpu", {})
    return {"name": name, "gpu": gpu} | extra


def _cluster(nodes: list[dict], running: dict | None = None, budgets: list | None = None) -> Cluster:
    return Cluster.model_validate({"nodes": nodes, "running": running or {}, "disruption_budgets": budgets or []})


class TestCrowded:
    """The built-in `crowded` scenario: no node has eight GPUs free."""

    def test_fewest_moves_for_an_eight_gpu_island_then_fewest_gpus(self, gpusched):
        result = gpusched("defrag", "crowded", "--for", "8@island")
        assert result.exit_code == 0
        assert result.lines[:6] == [
            "room for 1 pod x 8 GPUs, each inside one NVLink island: 0 fit now",
            "1. move finetune-b: dgx-b GPUs [0, 1] -> pcie-a GPUs [6, 7]",
            "2. move notebook-3: dgx-b GPUs [2] -> pcie-a GPUs [1]",
            "3. move notebook-4: dgx-b GPUs [5] -> pcie-a GPUs [3]",
            "then target-0 -> dgx-b GPUs [0, 1, 2, 3, 4, 5, 6, 7] islands [0]",
            "solver: OPTIMAL (proven): moves 3, GPUs moved 4",
        ]  # clearing dgx-a also takes 3 moves but 6 GPUs (the 4-GPU training pod)
        assert "kubectl delete pod finetune-b   # re-create on pcie-a, GPUs [6, 7]" in result.lines
        assert ["descheduler", "HighNodeUtilization", "3", "3", "0", "(short)", "yes"] in result.words

    def test_json_shape(self, gpusched):
        report = gpusched("defrag", "crowded", "--for", "8@island", "--json").json()
        assert report["feasible"] and report["before"] == 0 and report["gpus_moved"] == 4
        assert [s["action"] for s in report["steps"]] == ["move"] * 3
        assert report["solve"]["status"] == "OPTIMAL" and report["kinds"] == 3
        assert report["targets"] == [{"pod": "target-0", "node": "dgx-b", "gpus": list(range(8)), "islands": [0]}]

    def test_moved_nvlink_pods_keep_their_island(self, gpusched):
        report = gpusched("defrag", "crowded", "--for", "8@island", "--json").json()
        finetune = next(m for m in report["moves"] if m["pod"] == "finetune-b")
        assert finetune["to_gpus"] in ([0, 1], [2, 3], [4, 5], [6, 7])  # one PCIe pair

    def test_two_eight_gpu_islands_cannot_be_made(self, gpusched):
        result = gpusched("defrag", "crowded", "--for", "8x2@island")
        assert result.exit_code == 1
        assert result.lines[1] == "no plan: the pods that would have to leave fit nowhere else"

    def test_as_many_blocks_as_the_moves_allow(self, gpusched):
        report = gpusched("defrag", "crowded", "--for", "2xmax@island", "--max-moves", "2", "--json").json()
        assert report["before"] == 4 and len(report["targets"]) == 5 and len(report["moves"]) == 1
        assert report["solve"]["levels"][0]["name"] == "target pods"

    def test_a_shape_that_fits_moves_nothing(self, gpusched):
        result = gpusched("defrag", "crowded", "--for", "4@island")
        assert result.exit_code == 0 and "nothing to move: it fits as the cluster is" in result.lines


class TestHandWorked:
    def test_the_fragmented_scenario_moves_the_training_pod_off_dgx_a(self, gpusched):
        report = gpusched("defrag", "fragmented", "--for", "8@island", "--json").json()
        assert len(report["moves"]) == 3 and report["gpus_moved"] == 6
        assert report["comparison"][0]["fits"] is False  # emptying the least-used node (pcie-a) gives pairs only

    def test_a_chain_moves_the_blocker_first(self):
        nodes = [
            _node("x", 4, [[0, 1, 2, 3]], {0: "a", 1: "a"}),
            _node("y", 2, [[0, 1]], {0: "b"}),
            _node("z", 1, [], {}),
        ]
        cluster = _cluster(nodes, {"a": {"nvlink": True}})
        report = defrag(cluster, parse_shape("4@island"))
        assert [(s.action, s.pod) for s in report.steps] == [("move", "b"), ("move", "a")]
        assert report.moves[0].to_node == "y" and report.steps[0].node == "z"

    def test_a_swap_evicts_one_pod_first_and_recreates_it_last(self):
        moves = [
            Move(pod="a", gpus=1, from_node="n", from_gpus=[0], to_node="n", to_gpus=[1]),
            Move(pod="b", gpus=1, from_node="n", from_gpus=[1], to_node="n", to_gpus=[0]),
        ]
        assert [(s.action, s.pod) for s in order_moves(moves)] == [("evict", "a"), ("move", "b"), ("create", "a")]

    def test_a_pod_pinned_by_its_budget_never_moves(self):
        nodes = [
            _node("x", 4, [[0, 1, 2, 3]], {0: "a"}),
            _node("y", 4, [[0, 1, 2, 3]], {0: "b", 1: "c"}),
            _node("z", 4, [], {}),
        ]
        running = {"a": {"labels": {"app": "db"}}, "b": {}, "c": {}}
        budget = [{"name": "db", "selector": {"app": "db"}, "max_unavailable": 0}]
        report = defrag(_cluster(nodes, running, budget), parse_shape("4@island"))
        assert [m.pod for m in report.moves] == ["b", "c"]  # two moves, not the pinned one

    def test_a_shape_that_fits_beside_a_node_already_over_its_cpu_moves_nothing(self, gpusched, write):
        """a runs 6 cpus on 4: no pod asking cpu may land there, but the target asks none and fits as it is."""
        nodes = [
            _node("a", 8, [list(range(8))], {0: "hog"}, cpu="4"),
            _node("b", 8, [list(range(8))], {0: "x", 1: "y"}, cpu="4"),
        ]
        running = {"hog": {"cpu": "6"}, "x": {"cpu": "1"}, "y": {"cpu": "1"}}
        cluster = write("c.json", {"nodes": nodes, "running": running})
        result = gpusched("defrag", cluster, "--for", "6x2", "--json")
        report = result.json()
        assert result.exit_code == 0 and report["feasible"] and report["moves"] == []
        assert report["solve"]["status"] == "OPTIMAL" and len(report["targets"]) == 2

    def test_a_moved_pod_keeps_its_model(self):
        nodes = [_node("x", 2, [[0, 1]], {0: "a"}), _node("y", 2, [[0, 1]], {}, gpu={"model": "H100-SXM5-80GB"})]
        cluster = _cluster(nodes, {"a": {"model": "A100-SXM4-80GB"}})
        report = defrag(cluster, parse_shape("2x2@island"))
        assert not report.feasible  # a cannot go to the H100 node, and the A100 node cannot hold it beside a target


class TestBadInput:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (("--for", "16@island"), "no node has 16 GPUs in one NVLink island (the largest island has 8)"),
            (("--for", "16"), "no node has 16 exclusive whole GPUs (the largest has 8)"),
            (("--for", "8@isl"), "--for: expected GPUS[xPODS|xmax][@island]"),
            (("--for", "0"), "--for: GPUs and pods must be at least 1"),
            (("--for", "8x0"), "--for: GPUs and pods must be at least 1"),
            (("--for", "4xmax"), "give --max-moves"),
            (("--for", "8@island", "--max-moves", "-1"), "--max-moves: must be 0 or more, got -1"),
            (("--for", "8@island", "--time-limit", "0"), "--time-limit: must be more than 0 seconds, got 0"),
        ],
    )
    def test_exit_2_with_one_message(self, gpusched, args, message):
        result = gpusched("defrag", "crowded", *args)
        assert result.exit_code == 2 and message in result.stderr and result.stdout == ""

    def test_too_few_moves_is_exit_1(self, gpusched):
        result = gpusched("defrag", "crowded", "--for", "8@island", "--max-moves", "2")
        assert result.exit_code == 1 and "within 2 moves" in result.lines[1]


# --- properties against exhaustive search ------------------------------------------------------------------------


@st.composite
def small_cases(draw):
    nodes, running = [], {}
    for n in range(3):
        count = draw(st.integers(2, 4))
        split = draw(st.integers(1, count))
        islands = [list(range(split))] + ([list(range(split, count))] if split < count else [])
        free, busy = list(range(count)), {}
        for p in range(draw(st.integers(0, min(2, 4 - len(running))))):
            size = draw(st.integers(1, 2))
            if len(free) < size:
                break
            start = draw(st.integers(0, len(free) - size))
            name = f"r{n}{p}"
            for g in free[start : start + size]:
                busy[g] = name
            free = free[:start] + free[start + size :]
            running[name] = {"nvlink": draw(st.booleans())}
        nodes.append(_node(f"n{n}", count, islands, busy))
    gpus = draw(st.integers(2, 4))
    pods = draw(st.sampled_from(["1", "2", "max"])) if gpus == 2 else "1"
    shape = parse_shape(f"{gpus}x{pods}" + ("@island" if draw(st.booleans()) else ""))
    return _cluster(nodes, running), shape, (draw(st.integers(0, 2)) if pods == "max" else None)


def _room(cluster: Cluster, placed: list[Assignment], shape) -> int:
    """Target pods that fit: free GPUs counted per island (or per node) from the model and the placements."""
    used = {(n.name, b.gpu) for n in cluster.nodes for b in n.gpu.busy} | {(a.node, g) for a in placed for g in a.gpus}
    total = 0
    for node in cluster.nodes:
        islands = node.gpu.island_of()
        free: dict[int, int] = {}
        for g in range(node.gpu.count):
            if (node.name, g) not in used:
                free[islands[g] if shape.island else 0] = free.get(islands[g] if shape.island else 0, 0) + 1
        total += sum(f // shape.gpus for f in free.values())
    return total


def _spots(base: Cluster, pods: list, used: frozenset) -> list[list[Assignment]]:
    """Every way to put these pods on GPUs nobody holds, each pod judged alone by the validator."""
    if not pods:
        return [[]]
    pod, found = pods[0], []
    for node in base.nodes:
        free = [g for g in range(node.gpu.count) if (node.name, g) not in used]
        for combo in combinations(free, len(pod.gpus)):
            spot = Assignment(pod.name, pod.needs, node.name, combo)
            if not violations(base, [spot]):
                found += [[spot, *rest] for rest in _spots(base, pods[1:], used | {(node.name, g) for g in combo})]
    return found


def _exhaustive(cluster: Cluster, shape, max_moves: int | None) -> tuple | None:
    """Best (-targets, moves, GPUs moved) over every set of moved pods and every new place for them."""
    pods = cluster.running_pods()
    best = None
    for size in range(len(pods) + 1 if max_moves is None else min(len(pods), max_moves) + 1):
        if best is not None and shape.pods is not None:
            break  # fewer moves always win when the number of target pods is fixed
        for moved in combinations(pods, size):
            base = without(cluster, [p.name for p in moved])
            held = frozenset((n.name, b.gpu) for n in base.nodes for b in n.gpu.busy)
            for placed in _spots(base, list(moved), held):
                assert not violations(base, placed)
                room = _room(base, placed, shape)
                if shape.pods is not None and room < shape.pods:
                    continue
                key = (-(room if shape.pods is None else 0), size, sum(len(p.gpus) for p in moved))
                best = key if best is None or key < best else best
    return best


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases())
def test_optimum_equals_exhaustive_search_is_valid_and_never_worse_than_the_descheduler(case):
    cluster, shape, max_moves = case
    expected = _exhaustive(cluster, shape, max_moves)
    try:
        report = defrag(cluster, shape, max_moves, SolverConfig(workers=1))
    except InputError:  # no node could ever hold the shape
        assert expected is None or (shape.pods is None and expected[0] == 0)
        return
    if expected is None:
        assert not report.feasible
        return
    assert report.feasible and report.solve.optimal
    targets = -len(report.targets) if shape.pods is None else 0
    assert (targets, len(report.moves), report.gpus_moved) == expected
    greedy = report.comparison[0]
    if shape.pods is not None and greedy.fits and greedy.valid:
        assert len(report.moves) <= len(greedy.moves)
    if shape.pods is None:
        assert len(report.targets) >= greedy.targets


def test_a_time_limited_solve_never_claims_more_than_it_proved(gpusched, write):
    """Whatever the clock allows: OPTIMAL only with every level proven, else the gap, else exit 1 and why."""
    from gpusched.bench.repair import busy_cluster

    cluster = write("busy.json", busy_cluster(300).model_dump_json(exclude_unset=True))
    result = gpusched("defrag", cluster, "--for", "8x4@island", "--time-limit", "0.05", "--workers", "1", "--json")
    report = result.json()
    if result.exit_code == 1:
        assert "no plan found within the time limit of 0.05 s" in report["reason"]
        return
    levels = report["solve"]["levels"]
    assert (report["solve"]["status"] == "OPTIMAL") == all(level["status"] == "OPTIMAL" for level in levels)
    text = gpusched("defrag", cluster, "--for", "8x4@island", "--time-limit", "0.05", "--workers", "1").stdout
    assert ("OPTIMAL (proven)" in text) != ("not proven optimal" in text)


# --- move order by every resource and by disruption budgets (issue 16) ------------------------------------------


def test_moves_wait_for_cpu_to_be_freed_and_a_cpu_cycle_evicts_first():
    """n2's pods must leave before p0 (6 cpu) fits there, and p0 must leave n0 before they fit: a cycle in cpu, not
    GPUs (the order once put p0 on n2 first, 14 cpu on 10)."""
    nodes = [
        _node("n0", 4, [], {2: "p0"}, cpu="6"),
        _node("n1", 4, [], {0: "p1", 1: "p2"}, cpu="10"),
        _node("n2", 4, [], {2: "p3", 3: "p4"}, cpu="10"),
    ]
    running = {"p0": {"cpu": "6"}, "p1": {"cpu": "2"}, "p2": {"cpu": "4"}, "p3": {"cpu": "4"}, "p4": {"cpu": "4"}}
    report = defrag(_cluster(nodes, running), parse_shape("4"))  # every step is validated with cpu and memory
    assert report.feasible and report.solve.optimal


def test_a_cycle_is_broken_by_a_pod_outside_the_budget_its_partners_share():
    nodes = [_node("n", 3, [], {0: "a", 1: "b", 2: "c"})]  # no GPU free: the cycle must be broken by an eviction
    running = {"a": {"labels": {"app": "x"}}, "b": {"labels": {"app": "x"}}, "c": {}}
    cluster = _cluster(nodes, running, [{"name": "x", "selector": {"app": "x"}, "max_unavailable": 2}])
    world = build_world(cluster, parse_shape("1"), Budgets.of(cluster))
    moves = [
        Move(pod="a", gpus=1, from_node="n", from_gpus=[0], to_node="n", to_gpus=[1]),
        Move(pod="b", gpus=1, from_node="n", from_gpus=[1], to_node="n", to_gpus=[2]),
        Move(pod="c", gpus=1, from_node="n", from_gpus=[2], to_node="n", to_gpus=[0]),
    ]
    steps = [(s.action, s.pod) for s in order_moves(moves, world)]
    assert steps == [("evict", "c"), ("move", "b"), ("move", "a"), ("create", "c")]  # a and b never down together
    assert [(s.action, s.pod) for s in order_moves(moves)][0] == ("evict", "a")  # without budgets: the first


@st.composite
def cpu_tight(draw):
    """Three nodes whose cpu the running pods nearly fill, so moves must wait for room in cpu as well as GPUs."""
    nodes, running = [], {}
    for n in range(3):
        busy = {}
        for g in range(4):
            if draw(st.booleans()):
                name = f"p{n}{g}"
                busy[g] = name
                running[name] = {"cpu": str(draw(st.sampled_from([1, 2, 4, 6])))}
        used = sum(int(running[name]["cpu"]) for name in busy.values())
        nodes.append(_node(f"n{n}", 4, [], busy, cpu=str(max(used, draw(st.sampled_from([4, 6, 8, 10]))))))
    return _cluster(nodes, running), parse_shape(draw(st.sampled_from(["4", "2x2", "3", "4@island"])))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cpu_tight())
def test_cpu_tight_defrags_order_their_moves_validly(case):
    cluster, shape = case
    try:
        report = defrag(cluster, shape, config=SolverConfig(workers=1))  # raises if a step over-commits cpu
    except InputError:
        return
    if report.feasible:
        assert sorted(s.pod for s in report.steps if s.action != "evict") == sorted(m.pod for m in report.moves)


@st.composite
def overcommitted(draw):
    """Three nodes with cpu that the running pods may already exceed (kube-scheduler let them, or they came first)."""
    nodes, running = [], {}
    for n in range(3):
        busy = {}
        for g in range(4):
            if draw(st.booleans()):
                busy[g] = f"p{n}{g}"
                running[f"p{n}{g}"] = {"cpu": str(draw(st.sampled_from([0, 1, 2, 4, 6])))}
        nodes.append(_node(f"n{n}", 4, [], busy, cpu=str(draw(st.sampled_from([2, 4, 6, 8])))))
    return _cluster(nodes, running), parse_shape(draw(st.sampled_from(["1", "2", "2x2", "3", "4@island"])))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(overcommitted())
def test_a_shape_that_fits_as_the_cluster_is_needs_no_moves(case):
    """Whatever the cpu: when the targets fit now, the answer is 0 moves, proven, never "no plan"."""
    cluster, shape = case
    try:
        report = defrag(cluster, shape, config=SolverConfig(workers=1))
    except InputError:
        return
    assert shape.pods is not None
    if report.before >= shape.pods:
        assert report.feasible and report.moves == [] and report.solve.optimal, report.reason


def test_a_cycle_is_sent_round_a_free_gpu_instead_of_taking_two_pods_of_a_budget_down():
    """r01 was sent onto r10's GPUs while r10 had to land on r01's: evict r01, move r10, re-create r01 took two pods
    of budget x (max_unavailable 1) down at once. n2's free GPU 3 makes the same two moves acyclic."""
    four = {"islands": [[0, 1], [2, 3]]}
    nodes = [
        _node("n0", 4, [], {0: "r00", 1: "r00", 3: "r01"}),
        _node("n1", 4, four["islands"], {1: "r10", 2: "r10", 3: "r11"}),
        _node("n2", 4, [], {0: "r20", 1: "r21", 2: "r21"}),
    ]
    x = {"labels": {"app": "x"}}
    running = {"r00": x, "r01": x, "r10": x, "r11": x | {"nvlink": True}, "r20": {}, "r21": x | {"nvlink": True}}
    budget = [{"name": "x", "selector": {"app": "x"}, "max_unavailable": 1}]
    report = defrag(_cluster(nodes, running, budget), parse_shape("2@island"))
    assert report.solve.optimal and (len(report.moves), report.gpus_moved) == (2, 3)
    assert [(s.action, s.pod, s.node) for s in report.steps] == [("move", "r01", "n2"), ("move", "r10", "n0")]


@st.composite
def budgeted(draw):
    """Nodes nearly full of 1- and 2-GPU pods, most under one budget of max_unavailable 1: moves chain and cycle."""
    nodes, running = [], {}
    for n in range(draw(st.integers(2, 3))):
        islands = draw(st.sampled_from([[[0, 1], [2, 3]], [[0, 1, 2, 3]], []]))
        busy, g = {}, 0
        while g < 4:
            size = draw(st.sampled_from([0, 1, 2, 2]))
            if size == 0 or g + size > 4:
                g += 1
                continue
            name = f"r{n}{g}"
            busy |= dict.fromkeys(range(g, g + size), name)
            running[name] = {"nvlink": draw(st.booleans()), "labels": {"app": draw(st.sampled_from("xxxy"))}}
            g += size
        nodes.append(_node(f"n{n}", 4, islands, busy))
    shape = parse_shape(draw(st.sampled_from(["2@island", "2x2@island", "3", "4", "2x2", "4@island"])))
    return _cluster(nodes, running, [{"name": "x", "selector": {"app": "x"}, "max_unavailable": 1}]), shape


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budgeted())
def test_no_step_takes_two_pods_of_a_max_unavailable_1_budget_down(case):
    """Counted here, step by step: a moved pod is down while it moves, an evicted one until it is re-created."""
    cluster, shape = case
    try:
        report = defrag(cluster, shape, config=SolverConfig(workers=1))
    except InputError:
        return
    labels = {name: needs.labels.get("app") for name, needs in cluster.running.items()}
    down: set[str] = set()
    for step in report.steps:
        assert sum(labels[pod] == "x" for pod in down | {step.pod}) <= 1, report.steps
        if step.action == "evict":
            down.add(step.pod)
        elif step.action == "create":
            down.discard(step.pod)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 4), st.permutations(range(4)), st.lists(st.sampled_from("xy"), min_size=4, max_size=4))
def test_moves_in_any_cycle_are_ordered_within_their_budget(pods: int, where: list[int], apps: list[str]):
    """Pods on GPUs 0..pods-1 of one node sent to a permutation of its 4 GPUs: any chain or cycle is ordered so that
    at most one pod of budget x is down at any step, sent round a GPU the plan leaves free, or refused."""
    names = [f"p{i}" for i in range(pods)]
    nodes = [_node("n", 4, [], dict(enumerate(names)))]
    running = {name: {"labels": {"app": apps[i]}} for i, name in enumerate(names)}
    cluster = _cluster(nodes, running, [{"name": "x", "selector": {"app": "x"}, "max_unavailable": 1}])
    world = build_world(cluster, parse_shape("1"), Budgets.of(cluster))
    moves = [
        Move(pod=name, gpus=1, from_node="n", from_gpus=[i], to_node="n", to_gpus=[where[i]])
        for i, name in enumerate(names)
        if where[i] != i
    ]
    try:
        moved, steps = schedule(moves, world)
    except Unorderable:
        assert pods == 4  # a GPU left free breaks every cycle
        return
    held = {i: name for i, name in enumerate(names)}
    down: set[str] = set()
    for step in steps:
        assert sum(running[pod]["labels"]["app"] == "x" for pod in down | {step.pod}) <= 1, steps
        for gpu in [g for g, pod in held.items() if pod == step.pod]:
            del held[gpu]
        if step.action == "evict":
            down.add(step.pod)
            continue
        assert all(g not in held for g in step.gpus), steps
        held |= dict.fromkeys(step.gpus, step.pod)
        down.discard(step.pod)
    assert sorted(m.pod for m in moved) == sorted(m.pod for m in moves)


# --- the target's tolerations, --like, and the one constraint that stops a plan (issue 23) ----------------------

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATES = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}


def _tainted_pool(write):
    """Two GPU nodes tainted as the GPU Operator does: 8 GPUs fit one island after one move."""
    island = [list(range(8))]
    nodes = [
        _node("g1", 8, island, {0: "a", 4: "b"}, taints=[TAINT]),
        _node("g2", 8, island, {0: "c"}, taints=[TAINT]),
    ]
    pods = [{"name": "train", "gpus": 8, "nvlink": True} | TOLERATES]
    return write("pool.json", {"cluster": {"nodes": nodes, "running": dict.fromkeys("abc", TOLERATES)}, "pods": pods})


def test_defrag_for_a_tainted_pool_takes_the_pods_tolerations(gpusched, write):
    pool = _tainted_pool(write)
    blind = gpusched("defrag", pool, "--for", "8@island")
    assert blind.exit_code == 1
    assert "no plan: taint: the target pods cannot go on g1, g2 (node(s) had untolerated taint(s))" in blind.stdout
    for args in (["--like", "train"], ["--for", "8@island", "--toleration", "nvidia.com/gpu=present:NoSchedule"]):
        report = gpusched("defrag", pool, *args, "--json").json()
        assert report["feasible"] and [m["pod"] for m in report["moves"]] == ["c"], args
        assert report["solve"]["status"] == "OPTIMAL" and report["targets"][0]["node"] == "g2"
    wrong = gpusched("defrag", pool, "--for", "8@island", "--toleration", "nvidia.com/gpu=absent:NoSchedule")
    assert wrong.exit_code == 1 and "taint:" in wrong.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--like", "nobody"], "no pod or job named 'nobody'"),
        (["--toleration", "nvidia.com/gpu"], "--for: give a shape, or --like POD"),
        (["--for", "8", "--toleration", "bad key!:NoSchedule"], "--toleration 'bad key!:NoSchedule'"),
        (["--for", "8", "--toleration", "k:Sometimes"], "--toleration 'k:Sometimes': effect"),
        (["--for", "8", "--from", "x.yaml"], "--from: only with --like"),
    ],
)
def test_bad_targets_exit_2(gpusched, write, args, message):
    result = gpusched("defrag", _tainted_pool(write), *args)
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_like_a_mig_pod_is_refused(gpusched, write):
    pods = write("p.json", {"pods": [{"name": "m", "gpus": 1, "mig_profile": "3g.40gb"}]})
    result = gpusched("defrag", _tainted_pool(write), "--like", "m", "--from", pods)
    assert result.exit_code == 2 and "--like: m asks for MIG instances (3g.40gb)" in result.stderr


def test_no_plan_names_the_budget_that_pins_the_pods():
    nodes = [_node("x", 4, [[0, 1, 2, 3]], {0: "db"}), _node("y", 2, [[0, 1]], {0: "other"})]
    budget = [{"name": "db", "selector": {"app": "db"}, "max_unavailable": 0}]
    cluster = _cluster(nodes, {"db": {"labels": {"app": "db"}}, "other": {}}, budget)
    report = defrag(cluster, parse_shape("4@island"))
    assert not report.feasible
    assert (
        report.reason
        == "budget: disruption budget(s) db pin the pods in the way (without it there would be room for 1)"
    )


def test_no_plan_names_each_constraint_that_alone_would_make_room():
    """A MIG GPU beside a free one, and a whole pair with a pinned pod: lifting either makes room for 2 GPUs."""
    mig = _node("m", 2, [[0, 1]], {}, gpu={"mig": [{"gpu": 0, "profile": "7g.80gb", "start": 0}]})
    pinned = _node("w", 2, [[0, 1]], {0: "db"})
    budget = [{"name": "db", "selector": {"app": "db"}, "max_unavailable": 0}]
    report = defrag(_cluster([mig, pinned], {"db": {"labels": {"app": "db"}}}, budget), parse_shape("2"))
    assert report.reason is not None and report.reason.startswith("budget: disruption budget(s) db")
    assert "; MIG: the GPUs are MIG-partitioned on m" in report.reason and "lifting any one" in report.reason


def test_no_plan_says_capacity_when_nothing_could_make_room():
    report = defrag(_cluster([_node("x", 4, [[0, 1, 2, 3]], {})]), parse_shape("4x2"))
    assert report.reason == (
        "capacity: even with every pod moved and nothing pinned, tainted, MIG-partitioned or time-sliced there is "
        "room for 1 of the 2 target pods"
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases())
def test_tolerating_every_taint_plans_as_if_the_pool_had_none(case):
    """The property that would have found the blind spot: taint every node and every running pod tolerates it; a
    target given the toleration gets the plan the untainted pool gets, one without it gets none."""
    cluster, shape, max_moves = case
    data = cluster.model_dump()
    for node in data["nodes"]:
        node["taints"] = [TAINT]
    data["running"] = {pod.name: pod.needs.model_dump() | TOLERATES for pod in cluster.running_pods()}
    tainted = Cluster.model_validate(data)
    try:
        plain = defrag(cluster, shape, max_moves, SolverConfig(workers=1))
    except InputError:
        return
    tolerant = shape_like(None, shape, [Toleration(key="nvidia.com/gpu", operator="Exists")])
    given_ = defrag(tainted, tolerant, max_moves, SolverConfig(workers=1))
    assert (given_.feasible, len(given_.moves), given_.gpus_moved, len(given_.targets)) == (
        plain.feasible,
        len(plain.moves),
        plain.gpus_moved,
        len(plain.targets),
    )
    if shape.pods is not None and plain.feasible:
        blind = defrag(tainted, shape, max_moves, SolverConfig(workers=1))
        assert not blind.feasible and blind.reason is not None and blind.reason.startswith("taint:")
