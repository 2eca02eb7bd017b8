"""Loading inputs: the documented format, the seed's one-line example, and one clear error per bad input."""

from __future__ import annotations

import pytest

from gpusched.errors import InputError
from gpusched.scenarios import load_cluster, load_pods, scenario_names

SEED_NODE = (
    '{"nodes": [{"name": "cc-lab-control-plane", "gpu": {"model": "A100-PCIE-80GB", "count": 4, '
    '"memory_gib": 80, "islands": [[0, 2], [1, 3]], "nvlink_gbps": 300}}]}'
)


def test_seed_one_line_node_loads_as_written(write):
    cluster = load_cluster(str(write("kind-model.json", SEED_NODE)))
    gpu = cluster.nodes[0].gpu
    assert gpu.count == 4 and gpu.island_of() == {0: 0, 2: 0, 1: 1, 3: 1}


def test_yaml_and_bare_pod_lists(write):
    path = write("pods.yaml", "- {name: a, gpus: 2}\n- {name: b, shared: true, memory_gib: 10}\n")
    pods = load_pods(str(path)).pods
    assert [p.name for p in pods] == ["a", "b"] and pods[1].gpus == 1


def test_every_builtin_scenario_loads():
    assert {"monday", "fragmented", "training", "weekend"} <= set(scenario_names())
    for name in scenario_names():
        assert load_cluster(name).nodes


def _node(**gpu):
    block = {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80} | gpu
    return {"nodes": [{"name": "n1", "gpu": block}]}


BAD_CLUSTERS = [
    ("malformed", "{nodes: [", "malformed YAML"),
    ("unknown key", {"nodes": [{"name": "n1", "gpus": {}}]}, "nodes[0](n1).gpus"),
    ("negative count", _node(count=-1), "nodes[0](n1).gpu.count"),
    ("fractional count", _node(count=2.5), "nodes[0](n1).gpu.count"),
    ("island index out of range", _node(islands=[[0, 9]]), "an island names GPU 9, but the node has GPUs 0..7"),
    ("island names a GPU twice", _node(islands=[[0, 1], [1, 2]]), "islands name GPU 1 twice"),
    (
        "overlapping MIG",
        _node(mig=[{"gpu": 0, "profile": "3g.40gb", "start": 0}, {"gpu": 0, "profile": "2g.20gb", "start": 2}]),
        "overlaps memory slices [2, 3]",
    ),
    ("illegal MIG start", _node(mig=[{"gpu": 0, "profile": "3g.40gb", "start": 2}]), "cannot start at memory slice 2"),
    ("unknown MIG profile", _node(mig=[{"gpu": 0, "profile": "3g.20gb", "start": 0}]), "unknown MIG profile '3g.20gb'"),
    (
        "MIG on a GPU without MIG",
        {
            "nodes": [
                {
                    "name": "n1",
                    "gpu": {
                        "model": "L4",
                        "count": 1,
                        "memory_gib": 24,
                        "mig": [{"gpu": 0, "profile": "1g.10gb", "start": 0}],
                    },
                }
            ]
        },
        "does not support MIG",
    ),
    ("busy index out of range", _node(busy=[{"gpu": 8, "pod": "x"}]), "a busy entry names GPU 8"),
    ("busy twice on an exclusive GPU", _node(busy=[{"gpu": 1, "pod": "x"}, {"gpu": 1, "pod": "y"}]), "busy 2 times"),
    ("duplicate node names", {"nodes": [{"name": "a"}, {"name": "a"}]}, "a appear more than once"),
    ("not a mapping", [1, 2], "expected a mapping with a `nodes` list"),
]


@pytest.mark.parametrize(("case", "content", "expected"), BAD_CLUSTERS, ids=[c[0] for c in BAD_CLUSTERS])
def test_bad_cluster_is_one_clear_error(write, case, content, expected):
    path = write("cluster.yaml", content)
    with pytest.raises(InputError) as caught:
        load_cluster(str(path))
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_malformed_json_names_line_and_column(write):
    path = write("cluster.json", '{"nodes": [}')
    with pytest.raises(InputError, match=r"malformed JSON at line 1 column 12"):
        load_cluster(str(path))


def test_unknown_scenario_or_missing_file():
    with pytest.raises(InputError, match="no such file \\(nor a built-in scenario"):
        load_cluster("tuesday")


def test_running_pods_come_from_busy_and_mig_entries_with_their_needs(write):
    cluster = load_cluster(
        str(
            write(
                "c.yaml",
                {
                    "nodes": [
                        {
                            "name": "a",
                            "gpu": {
                                "model": "A100-SXM4-80GB",
                                "count": 2,
                                "memory_gib": 80,
                                "busy": [{"gpu": 0, "pod": "t"}, {"gpu": 1, "pod": "t"}],
                            },
                        },
                        {
                            "name": "m",
                            "gpu": {
                                "model": "A100-SXM4-80GB",
                                "count": 1,
                                "memory_gib": 80,
                                "mig": [{"gpu": 0, "profile": "3g.40gb", "start": 4, "holder": "r"}],
                            },
                        },
                    ],
                    "running": {"t": {"priority": 100, "nvlink": True, "labels": {"app": "train"}}},
                    "disruption_budgets": [{"name": "train", "selector": {"app": "train"}, "max_unavailable": 0}],
                },
            )
        )
    )
    pods = {p.name: p for p in cluster.running_pods()}
    assert (pods["t"].node, pods["t"].gpus, pods["t"].needs.priority) == ("a", (0, 1), 100)
    assert (pods["r"].node, pods["r"].mig, pods["r"].needs.priority) == ("m", ((0, 4),), 0)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"running": {"ghost": {"priority": 1}}}, "running names pods that hold no busy GPU or MIG instance: ghost"),
        (
            {"disruption_budgets": [{"name": "x", "selector": {}}]},
            "give exactly one of max_unavailable and min_available",
        ),
    ],
)
def test_bad_running_and_budgets(write, extra, expected):
    path = write("c.json", {"nodes": [{"name": "a"}]} | extra)
    with pytest.raises(InputError, match=expected):
        load_cluster(str(path))
