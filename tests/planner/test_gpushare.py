"""The milli-GPU model: the FGD fragmentation measure against its definition, the policies' choices, the loaders."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.errors import InputError
from gpusched.planner.gpushare import SHARE_POLICIES, PodTable, ShareState, share_policy, target_workload
from gpusched.planner.gpushare.policies import GpuschedArgs, PolicyRegistry, SharePolicy
from gpusched.planner.gpushare.state import SharePod
from gpusched.scenarios.openb import OpenbNode, OpenbPod, load_openb_nodes, load_openb_pods, openb_cluster

STRAND = GpuschedArgs().strand

NODES = [
    OpenbNode(name="n-a", cpu_milli=16000, memory_mib=65536, gpu=4, model="T4"),
    OpenbNode(name="n-b", cpu_milli=8000, memory_mib=65536, gpu=2, model="P100"),
    OpenbNode(name="n-c", cpu_milli=64000, memory_mib=262144, gpu=8, model="G2"),
]
PODS = [
    OpenbPod(name="share-5", cpu_milli=4000, num_gpu=1, gpu_milli=500),
    OpenbPod(name="share-5b", cpu_milli=4000, num_gpu=1, gpu_milli=500),
    OpenbPod(name="share-3", cpu_milli=2000, num_gpu=1, gpu_milli=300, models=("T4",)),
    OpenbPod(name="one", cpu_milli=8000, num_gpu=1, gpu_milli=1000),
    OpenbPod(name="two", cpu_milli=12000, num_gpu=2, gpu_milli=1000, models=("G2", "P100")),
    OpenbPod(name="cpu", cpu_milli=6000, num_gpu=0, gpu_milli=0),
]


def _setup():
    table = PodTable.of(PODS)
    state = ShareState(openb_cluster(NODES), table)
    return table, state, target_workload(table, state, coverage=1.0)


def _frag_by_definition(left: list[int], cpu: int, model: str, table: PodTable) -> float:
    """fgd.md, literally: per task class m with popularity p_m, the free milli no task of m can use."""
    counts: dict[int, int] = {}
    for pod in table.pods:
        counts[pod.klass] = counts.get(pod.klass, 0) + 1
    total = 0.0
    for klass, n in counts.items():
        cpu_m, gpus_m, milli_m, spec = table.classes[klass]
        allowed = table.specs[spec]
        if gpus_m == 0 or (allowed and model not in allowed):
            frag = sum(left)
        elif sum(g >= milli_m for g in left) >= gpus_m and cpu >= cpu_m:
            frag = sum(g for g in left if g < milli_m)
        else:
            frag = sum(left)
        total += n / len(table.pods) * frag
    return total


def test_stranded_is_the_gpu_milli_the_free_cpu_cannot_feed():
    table, state, target = _setup()
    gpu_pods = [pod for pod in PODS if pod.num_gpu]
    ratio = sum(p.cpu_milli for p in gpu_pods) / sum(p.total_milli for p in gpu_pods)  # coverage 1: every pod
    assert target.cpu_per_milli == pytest.approx(ratio)
    rng = np.random.default_rng(11)
    left = rng.choice([0, 250, 1000], size=(50, state.gpu_left.shape[1]))
    cpu = rng.integers(0, 40000, size=50)
    expected = [max(0.0, sum(row) - c / ratio) for row, c in zip(left.tolist(), cpu.tolist(), strict=True)]
    assert target.stranded(left, cpu) == pytest.approx(expected)


def test_fragmentation_matches_the_definition():
    table, state, target = _setup()
    rng = np.random.default_rng(7)
    for _ in range(200):
        node = int(rng.integers(state.size))
        width = int(state.gpus[node])
        left = np.zeros(state.gpu_left.shape[1], dtype=np.int64)
        left[:width] = rng.choice([0, 100, 300, 499, 500, 700, 1000], size=width)
        cpu = int(rng.integers(0, 20000))
        got = target.frag(left[None, :], np.array([cpu]), np.array([node]))[0]
        model = state.models[state.model[node]]
        assert got == pytest.approx(_frag_by_definition(left[:width].tolist(), cpu, model, table))


@pytest.mark.parametrize("factor", [1, 2])
def test_cpu_is_scarce_when_the_workload_asks_more_cpu_per_gpu_than_the_cluster_has(factor):
    nodes = [node.model_copy(update={"cpu_milli": node.cpu_milli * factor}) for node in NODES]
    table = PodTable.of(PODS)
    state = ShareState(openb_cluster(nodes), table)
    asked = sum(p.cpu_milli for p in PODS) / sum(p.total_milli for p in PODS)
    has = sum(n.cpu_milli for n in nodes) / (1000 * sum(n.gpu for n in nodes))
    assert asked != pytest.approx(has)
    assert target_workload(table, state, coverage=1.0).cpu_scarce == (asked >= has)


def test_cpu_only_pods_follow_fgds_measure_where_cpu_is_scarce():
    """CPU short: a CPU-only pod goes to n-a, where FGD's fragmentation does not grow, though the stranded milli grow
    there; the stranded measure would pick n-b, whose half-free GPU loses the half-GPU class but stays fed."""
    nodes = [
        OpenbNode(name="n-a", cpu_milli=20000, memory_mib=65536, gpu=2, model="T4"),
        OpenbNode(name="n-b", cpu_milli=18000, memory_mib=65536, gpu=1, model="T4"),
    ]
    whole = OpenbPod(name="w", cpu_milli=8000, num_gpu=1, gpu_milli=1000)
    half = OpenbPod(name="s", cpu_milli=8000, num_gpu=1, gpu_milli=500)
    cpu_only = OpenbPod(name="c", cpu_milli=4000, num_gpu=0, gpu_milli=0)
    table = PodTable.of([whole, half, cpu_only, cpu_only])
    state = ShareState(openb_cluster(nodes), table)
    target = target_workload(table, state, coverage=1.0)
    assert target.cpu_scarce
    state.bind(table.pods[1], 1, (0,))
    left, before, index = state.gpu_left, state.cpu_left.copy(), np.arange(2)
    after = before - cpu_only.cpu_milli
    fgd = target.frag(left, after, index) - target.frag(left, before, index)
    stranded = target.stranded(left, after) - target.stranded(left, before)
    assert fgd[0] == 0 < fgd[1] and (fgd + STRAND * stranded).argmin() == 1  # the premise
    policy = share_policy("gpusched").build(state, table, target, np.random.default_rng(0))
    assert policy.choose(table.pods[2], np.random.default_rng(0)) == (0, ())


def test_stranded_counts_memory_too():
    """GPU milli the free memory cannot feed are stranded as those the free CPU cannot: the smaller feed counts."""
    nodes = [
        OpenbNode(name="n-a", cpu_milli=64000, memory_mib=4096, gpu=2, model="T4"),
        OpenbNode(name="n-b", cpu_milli=64000, memory_mib=65536, gpu=2, model="T4"),  # enough memory in all
    ]
    pods = [OpenbPod(name="s", cpu_milli=4000, memory_mib=8192, num_gpu=1, gpu_milli=500)]
    table = PodTable.of(pods)
    state = ShareState(openb_cluster(nodes), table)
    target = target_workload(table, state, coverage=1.0)
    assert (target.cpu_per_milli, target.memory_per_milli) == (8.0, 16.384)
    left = np.array([[1000, 1000]])
    assert target.stranded(left, np.array([64000]), np.array([4096]))[0] == pytest.approx(2000 - 4096 / 16.384)
    assert target.stranded(left, np.array([8000]), np.array([65536]))[0] == pytest.approx(1000)
    assert target.stranded(left, np.array([64000]))[0] == 0  # memory not given: CPU alone


def _reference_scores(policy, pod: SharePod, table: PodTable, state: ShareState) -> dict[int, tuple[int, int]]:
    """gpusched's score per feasible node from the documented measure, in plain Python (coverage 1: every pod),
    as the scores of a growth a hair above and below the one computed."""
    gpu_pods = [p for p in table.pods if p.gpus]
    asked = sum(p.total_milli for p in gpu_pods)
    ratio = sum(p.cpu for p in gpu_pods) / asked if asked else 0.0
    memory_ratio = sum(p.memory for p in gpu_pods) / asked if asked else 0.0
    fgd_only = policy.target.cpu_scarce and not pod.gpus

    def measure(left: list[int], cpu: int, memory: int, node: int) -> float:
        value = _frag_by_definition(left, cpu, state.models[state.model[node]], table)
        fed = min(cpu / ratio if ratio else math.inf, memory / memory_ratio if memory_ratio else math.inf)
        return value + (0.0 if fgd_only else STRAND * max(0.0, sum(left) - fed))

    scores = {}
    for node in np.flatnonzero(state.feasible(pod)).tolist():
        left = state.gpu_left[node, : state.gpus[node]].tolist()
        cpu, memory = int(state.cpu_left[node]), int(state.memory_left[node])
        now = measure(left, cpu, memory, node)
        if pod.shares:
            options = [[g - pod.milli if i == j else g for j, g in enumerate(left)] for i in range(len(left))]
            options = [o for o, g in zip(options, left, strict=True) if g >= pod.milli]
        else:
            free = [i for i, g in enumerate(left) if g == 1000][: pod.gpus]
            options = [[0 if i in free else g for i, g in enumerate(left)]]
        grows = min(measure(o, cpu - pod.cpu, memory - pod.memory, node) for o in options) - now
        scores[node] = tuple(math.floor(100 / (1 + math.exp((grows + e) / 1000))) for e in (1e-6, -1e-6))
    return scores


def _decisions(nodes: list[OpenbNode], pods: list[OpenbPod], seed: int) -> list:
    """gpusched's choices for the pods in order, each checked against plain lists of what is left."""
    table = PodTable.of(pods)
    state = ShareState(openb_cluster(nodes), table)
    rng = np.random.default_rng(seed)
    policy = share_policy("gpusched").build(state, table, target_workload(table, state), rng)
    ordered = sorted(nodes, key=lambda n: n.name)
    cpu = [n.cpu_milli for n in ordered]
    memory = [n.memory_mib for n in ordered]
    gpus = [[1000] * n.gpu for n in ordered]
    choices = []
    for pod, row in zip(table.pods, pods, strict=True):
        fits = [
            cpu[i] >= pod.cpu
            and memory[i] >= pod.memory
            and (
                pod.gpus == 0
                or (
                    (not row.models or ordered[i].model in row.models)
                    and (max(gpus[i], default=0) >= pod.milli if pod.shares else gpus[i].count(1000) >= pod.gpus)
                )
            )
            for i in range(len(ordered))
        ]
        choice = policy.choose(pod, rng)
        assert (choice is not None) == any(fits)
        if choice is not None:
            node, taken = choice
            assert fits[node] and len(taken) == pod.gpus == len(set(taken))
            assert all(gpus[node][g] >= pod.milli for g in taken)
            cpu[node] -= pod.cpu
            memory[node] -= pod.memory
            for g in taken:
                gpus[node][g] -= pod.milli
            state.bind(pod, node, taken)
        choices.append(choice)
    assert state.cpu_left.tolist() == cpu and state.memory_left.tolist() == memory
    return choices


MODELS = ("T4", "G2", "P100")
node_lists = st.lists(
    st.builds(
        lambda i, gpu, cpu, model, memory: OpenbNode(
            name=f"n-{i}", cpu_milli=cpu * 1000, memory_mib=memory * 4096, gpu=gpu, model=MODELS[model]
        ),
        st.integers(0, 99),
        st.integers(1, 8),
        st.integers(2, 64),
        st.integers(0, 2),
        st.integers(1, 32),
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda n: n.name,
)
pod_lists = st.lists(
    st.one_of(
        st.builds(lambda c: OpenbPod(name="c", cpu_milli=c * 500, num_gpu=0, gpu_milli=0), st.integers(1, 16)),
        st.builds(
            lambda c, m, spec, memory: OpenbPod(
                name="s",
                cpu_milli=c * 500,
                memory_mib=memory * 2048,
                num_gpu=1,
                gpu_milli=m * 50,
                models=(MODELS[spec],) if spec < 3 else (),
            ),
            st.integers(0, 16),
            st.integers(1, 19),
            st.integers(0, 5),
            st.integers(0, 8),
        ),
        st.builds(
            lambda c, k: OpenbPod(name="w", cpu_milli=c * 1000, num_gpu=k, gpu_milli=1000),
            st.integers(0, 32),
            st.sampled_from([1, 2, 4, 8]),
        ),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(nodes=node_lists, pods=pod_lists, seed=st.integers(0, 1000))
def test_gpuscheds_policy_places_validly_and_repeats_exactly(nodes, pods, seed):
    first = _decisions(nodes, pods, seed)
    assert _decisions(nodes, pods, seed) == first


@settings(max_examples=60, deadline=None)
@given(nodes=node_lists, pods=pod_lists, seed=st.integers(0, 1000))
def test_gpuscheds_choice_is_the_best_by_its_documented_measure(nodes, pods, seed):
    table = PodTable.of(pods)
    state = ShareState(openb_cluster(nodes), table)
    rng = np.random.default_rng(seed)
    policy = share_policy("gpusched").build(state, table, target_workload(table, state, coverage=1.0), rng)
    for pod in table.pods:
        reference = _reference_scores(policy, pod, table, state)
        choice = policy.choose(pod, rng)
        assert (choice is None) == (not reference)
        if choice is not None:
            # scores as integers, ⌊100·sigmoid⌋: summed in another order, a growth of 0 may floor one lower
            assert reference[choice[0]][1] >= max(low for low, _ in reference.values())
            state.bind(pod, *choice)


def test_target_workload_covers_the_popular_classes_first():
    table, state, _ = _setup()
    partial = target_workload(table, state, coverage=0.5)  # share-5 (2 of 6) then one more class reach 50%
    assert partial.popularity.sum() + partial.cpu_only == pytest.approx(1.0)
    assert partial.milli.tolist()[0] == 500 and partial.popularity.max() == pytest.approx(2 / 3)


@pytest.mark.parametrize("name", list(SHARE_POLICIES))
def test_every_policy_places_only_where_the_pod_fits(name):
    table, state, target = _setup()
    rng = np.random.default_rng(1)
    policy = share_policy(name).build(state, table, target, rng)
    for pod in table.pods * 4:
        fitting = set(np.flatnonzero(state.feasible(pod)).tolist())
        choice = policy.choose(pod, rng)
        if not fitting:
            assert choice is None
            continue
        node, gpus = choice
        assert node in fitting
        assert len(gpus) == pod.gpus and len(set(gpus)) == len(gpus)
        assert all(state.gpu_left[node, g] >= pod.milli for g in gpus)
        state.bind(pod, node, gpus)
    assert (state.gpu_left >= 0).all() and (state.cpu_left >= 0).all()
    assert state.allocated_milli == state.capacity_milli - int(state.gpu_left.sum())


def test_the_registry_refuses_a_name_twice_in_any_case():
    registry = PolicyRegistry()

    class Mine(SharePolicy):
        name = "Mine"

    class Again(SharePolicy):
        name = "mINE"

    assert registry.register(Mine) is Mine
    with pytest.raises(ValueError, match="'mINE' is registered twice"):
        registry.register(Again)
    assert list(registry) == ["Mine"] and registry.get("mine") is Mine
    for policy in SHARE_POLICIES:  # the shipped registry: every name once, found in any case
        assert SHARE_POLICIES.get(policy.upper()).name == policy


def test_policy_arguments_are_typed_and_named_in_the_label():
    spec = share_policy("GPUSCHED:strand=0.5")
    assert spec.policy.name == "gpusched" and spec.args == GpuschedArgs(strand=0.5)
    assert spec.label == "gpusched:strand=0.5"
    assert share_policy("gpusched:strand=1").label == "gpusched"  # the default is not repeated
    assert share_policy("FGD").label == "FGD"
    for text, message in [
        ("gpusched:strand=much", "strand: Input should be a valid number"),
        ("gpusched:strand=-1", "strand: Input should be greater than or equal to 0"),
        ("gpusched:strand=nan", "strand: Input should be a finite number"),
        ("gpusched:weight=1", "weight: Extra inputs are not permitted"),
        ("gpusched:strand", "expected key=value, got 'strand'"),
        ("gpusched:strand=1:strand=2", "strand given twice"),
        ("FGD:strand=1", "policy FGD: strand: Extra inputs are not permitted (arguments: none)"),
        ("Tetris", "unknown policy 'Tetris'"),
    ]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            share_policy(text)


def test_an_argument_changes_the_measure():
    table, state, target = _setup()
    rng = np.random.default_rng(0)
    off = share_policy("gpusched:strand=0").build(state, table, target, rng)
    on = share_policy("gpusched:strand=2").build(state, table, target, rng)
    left, cpu, memory, nodes = state.gpu_left, state.cpu_left - 15000, state.memory_left, np.arange(state.size)
    stranded = target.stranded(left, cpu, memory)
    assert stranded.any()
    assert on.measure(left, cpu, memory, nodes) == pytest.approx(target.frag(left, cpu, nodes) + 2 * stranded)
    assert off.measure(left, cpu, memory, nodes) == pytest.approx(target.frag(left, cpu, nodes))


def test_sharing_pods_choose_a_gpu():
    table, state, target = _setup()
    rng = np.random.default_rng(3)
    best_fit = share_policy("binpack").build(state, table, target, rng)
    half = table.pods[0]
    node, first = best_fit.choose(half, rng)
    state.bind(half, node, first)
    assert best_fit.choose(half, rng) == (node, first)  # the half-used GPU before a fresh one
    worst = share_policy("spread").build(state, table, target, rng)
    other, (gpu,) = worst.choose(half, rng)
    assert state.gpu_left[other, gpu] == 1000  # spread: the emptiest node, a fresh GPU


def test_release_restores_the_node():
    table, state, _ = _setup()
    before = (state.gpu_left.copy(), state.cpu_left.copy(), state.affinity.copy())
    pod = table.pods[4]
    node = int(np.flatnonzero(state.feasible(pod))[0])
    gpus = state.whole_gpus(node, pod.gpus)
    state.bind(pod, node, gpus)
    state.release(pod, node, gpus)
    assert all((a == b).all() for a, b in zip(before, (state.gpu_left, state.cpu_left, state.affinity), strict=True))
    assert state.allocated_milli == 0


def test_loaders_accept_the_column_variants(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu,memory_mib,gpu,model\nn-0,32,1024,2,T4\nn-1,16,1024,0,nan\n")
    found = load_openb_nodes(nodes)
    assert [(n.name, n.cpu_milli, n.gpu, n.model) for n in found] == [("n-0", 32000, 2, "T4"), ("n-1", 16000, 0, "")]
    pods = tmp_path / "pods.csv"
    pods.write_text("job_id,num_cpu,num_gpu\n7,4,2\n8,2,0\n")
    loaded = load_openb_pods(pods)
    assert [(p.name, p.cpu_milli, p.num_gpu, p.gpu_milli, p.memory_mib) for p in loaded] == [
        ("7", 4000, 2, 1000, 0),
        ("8", 2000, 0, 0, 0),
    ]


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,1,1500\n",
            "line 2 (p).gpu_milli",
            "less than or equal to 1000",
        ),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,x,1,1,500\n", "line 2 (p).cpu_milli", "valid integer"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,500\n", "line 2 (p)", "gpu_milli must be 0"),
        ("name,memory_mib,num_gpu,gpu_milli\np,1,1,500\n", "header", "no cpu_milli or cpu or num_cpu column"),
    ],
)
def test_bad_rows_name_the_line_and_field(tmp_path, text, field, message):
    path = tmp_path / "pods.csv"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_openb_pods(path)
    assert caught.value.field == field and message in caught.value.message
