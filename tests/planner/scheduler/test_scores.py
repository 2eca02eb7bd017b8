"""kube-scheduler's Score plugins, normalisation, weights and pick, worked out by hand from the upstream formulas
(pkg/scheduler/framework/plugins), and profiles read from a KubeSchedulerConfiguration."""

from __future__ import annotations

import pytest
from test_k8s import listed, pod

from gpusched.errors import InputError
from gpusched.planner.scheduler.predict import predict
from gpusched.planner.scheduler.profile import load_profiles
from gpusched.planner.scheduler.scoring import num_feasible_nodes_to_find

HOST = "kubernetes.io/hostname"


def node(name, cpu="8", memory="16Gi", zone="z1", taints=None, images=None):
    status = {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}
    if images:
        status["images"] = images
    return {"kind": "Node", "metadata": {"name": name, "labels": {HOST: name, "zone": zone}},
            "spec": {"taints": taints} if taints else {}, "status": status}  # fmt: skip


def web(name, on=None, cpu="1", memory="1Gi", image="nginx", **spec):
    container = {"name": "m", "image": image, "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    found = pod(name, on=on, containers=[container], **spec)
    found["metadata"]["labels"] = {"app": "web"}
    return found


NODES = [
    node(
        "a",
        taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}],
        images=[{"names": ["nginx:latest"], "sizeBytes": 500_000_000}],
    ),  # fmt: skip
    node("b", cpu="4"),
    node("c", memory="32Gi", zone="z2"),
]
ANTI = {"weight": 50, "podAffinityTerm": {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "web"}}}}
PREFERRED = {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}
SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
          "labelSelector": {"matchLabels": {"app": "web"}}}  # fmt: skip


def target(**spec):
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [PREFERRED]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [ANTI]}}  # fmt: skip
    return web("p", affinity=affinity, topologySpreadConstraints=[SPREAD], **spec)


def scores_of(result):
    return {p.plugin: p.scores for p in result.scores.plugins}


def test_every_default_score_plugin_by_hand():
    result = predict(listed(*NODES), listed(web("x", on="c", cpu="2", memory="4Gi")), target())
    found = scores_of(result)
    assert found["TaintToleration"] == {"a": 0, "b": 100, "c": 100}  # one untolerated PreferNoSchedule, reversed
    assert found["NodeAffinity"] == {"a": 100, "b": 100, "c": 0}
    # LeastAllocated: a (7000*100//8000=87 + 15*100//16=93)//2; c counts x's 2 cpu and 4Gi
    assert found["NodeResourcesFit"] == {"a": 90, "b": 84, "c": 73}
    assert found["PodTopologySpread"] == {"a": 100, "b": 100, "c": 0}  # z2 holds one web pod
    assert found["InterPodAffinity"] == {"a": 100, "b": 100, "c": 0}  # -50 on c, normalised min..max
    # the balance with the pod, 100 * (1 - |1/8 - 1/16| / 2) = 96 on a, against 100 without: 50 + (50 + 96 - 100) / 2
    assert found["NodeResourcesBalancedAllocation"] == {"a": 73, "b": 70, "c": 73}
    assert found["ImageLocality"] == {"a": 13, "b": 0, "c": 0}  # 500 MB on 1 of 3 nodes, 23..1000 MB
    assert found["VolumeBinding"] == found["DynamicResources"] == {"a": 0, "b": 0, "c": 0}  # scored, as 0
    assert result.scores.skipped == []
    assert result.scores.totals == {"a": 776, "b": 1054, "c": 446}  # as the real 1.37.2 logs them (--v=10)
    assert result.scores.top == ["b"]
    before = predict(listed(*NODES), listed(web("x", on="c", cpu="2", memory="4Gi")), target(), "1.35")
    assert scores_of(before)["NodeResourcesBalancedAllocation"] == {"a": 96, "b": 90, "c": 89}  # the balance itself
    assert "VolumeBinding" not in scores_of(before) and "VolumeBinding" in before.scores.skipped  # no scorer yet
    oldest = predict(listed(*NODES), listed(web("x", on="c", cpu="2", memory="4Gi")), target(), "1.34")
    assert "DynamicResources" not in scores_of(oldest) and "DynamicResources" not in oldest.scores.skipped  # no Score


def test_ties_are_a_set_and_one_node_is_not_scored():
    result = predict(listed(node("a"), node("b")), None, web("p"))
    assert result.scores.top == ["a", "b"]
    assert "NodeAffinity" in result.scores.skipped and "InterPodAffinity" in result.scores.skipped
    alone = predict(listed(node("a")), None, web("p"))
    assert alone.scores.top == ["a"] and alone.scores.reason == "one feasible node: no scoring"


def test_best_effort_pods_skip_balanced_allocation_but_fit_counts_nonzero_requests():
    bare = pod("p")  # no requests: 100m and 200Mi for NodeResourcesFit
    result = predict(listed(node("a"), node("b", cpu="4")), None, bare)
    assert "NodeResourcesBalancedAllocation" in result.scores.skipped
    # a: (7900*100//8000=98 + (16184*100//16384=98) // 2; b: 3900*100//4000=97
    assert scores_of(result)["NodeResourcesFit"] == {"a": 98, "b": 97}


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (None, 50, 50),
        (None, 100, 100),
        (None, 1000, 420),
        (None, 5000, 500),
        (None, 2500, 750),
        (None, 10000, 500),
        (10, 500, 100),
        (30, 1000, 300),
        (100, 5000, 5000),
    ],  # fmt: skip
)
def test_num_feasible_nodes_to_find(percentage, nodes, expected):
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_a_large_cluster_is_a_sample():
    many = [node(f"n{i:03d}") for i in range(120)]
    assert predict(listed(*many[:99]), None, web("p")).scores.sample is None  # under 100 nodes: all searched
    result = predict(listed(*many), None, web("p"))  # 120 * 50% = 60, at least 100
    assert result.scores.sample and "first 100 feasible nodes" in result.scores.sample
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "percentageOfNodesToScore": 100}  # fmt: skip
    assert predict(listed(*many), None, web("p"), profiles=_profiles(config)).scores.sample is None


def _profiles(config, tmp=None):
    import json
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(config, handle)
    return load_profiles(handle.name)[0]


def test_a_profile_sets_weights_and_strategies():
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "plugins": {"score": {"disabled": [{"name": "ImageLocality"}],
                                  "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}}],
        }, {
            "schedulerName": "ratio",
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                "type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 1}],
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                                       {"utilization": 100, "score": 10}]}}}}],
        }],
    }  # fmt: skip
    profiles = _profiles(config)
    pods = listed(web("x", on="c", cpu="2", memory="4Gi"))
    most = predict(listed(*NODES), pods, target(), profiles=profiles)
    assert "ImageLocality" not in scores_of(most)
    assert {p.plugin: p.weight for p in most.scores.plugins}["NodeResourcesFit"] == 5
    assert scores_of(most)["NodeResourcesFit"] == {"a": 10, "b": 20, "c": 31}  # (12*3 + 6) // 4 on a
    ratio = predict(listed(*NODES), pods, target(schedulerName="ratio"), profiles=profiles)
    assert scores_of(ratio)["NodeResourcesFit"] == {"a": 12, "b": 25, "c": 37}
    other = predict(listed(*NODES), pods, target(schedulerName="nobody"), profiles=profiles)
    assert other.never_tried == "not this scheduler's pod: never tried by default-scheduler, ratio"


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"kind": "KubeSchedulerConfiguration", "apiVersion": "v1"}, "apiVersion"),
        ({"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1",
          "percentageOfNodesToScore": 101}, "percentageOfNodesToScore"),
        ({"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1",
          "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Best"}}}]}]},
         "profiles[0].pluginConfig[0].args.scoringStrategy.type"),
        ({"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1",
          "profiles": [{}, {}]}, "profiles[1].schedulerName"),
    ],
)  # fmt: skip
def test_a_bad_configuration_names_the_field(config, field):
    with pytest.raises(InputError) as caught:
        _profiles(config)
    assert field in str(caught.value)


def test_k8s_prints_the_scores(gpusched, write):
    run = gpusched("k8s", "--nodes", write("nodes.json", listed(*NODES)), "--pods",
                   write("pods.json", listed(web("x", on="c", cpu="2", memory="4Gi"))), write("pod.json", target()))  # fmt: skip
    assert run.exit_code == 0
    assert run.lines[0] == "fits: a, b, c"
    assert run.lines[1].split()[:3] == ["node", "TaintToleration", "x3"]
    assert run.lines[3].split() == ["b", "100", "100", "84", "0", "100", "100", "0", "70", "0", "1054"]
    assert "picks: b" in run.lines


def test_gpuscheds_own_emitted_profile_reads_back(gpusched, write, tmp_path):
    """`--emit-scheduler-config` writes a profile that `--scheduler-config` reads: no default spreading, the two
    unmodelled scorers off, the strategy and weights as emitted."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "gpu-binpack",
                      "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"},
                                                         {"name": "ImageLocality"}]}},
                      "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]}],
    }  # fmt: skip
    profile = _profiles(config)[0]
    assert not profile.system_spread and profile.unmodelled == ()
    assert "ImageLocality" not in profile.weights


def test_the_registry_refuses_a_name_twice_and_every_score_plugin_has_a_scorer():
    from gpusched.planner.scheduler.profile import SCORE_PLUGINS
    from gpusched.planner.scheduler.runtime import REGISTRY, PluginSpec, Point, Registry
    from gpusched.planner.scheduler.scoring import SCORERS

    with pytest.raises(ValueError, match="already registered"):
        Registry([PluginSpec("X", frozenset({Point.SCORE})), PluginSpec("X", frozenset())])
    assert set(SCORERS) == set(REGISTRY.implementing(Point.SCORE)) == set(SCORE_PLUGINS)


def test_a_score_plugin_gpusched_does_not_run_is_named():
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"plugins": {"score": {"enabled": [{"name": "VolumeZone"}, {"name": "MyPlugin"}]}}}]}  # fmt: skip
    result = predict(listed(node("a"), node("b")), None, web("p"), profiles=_profiles(config))
    notes = result.scores.not_modelled
    assert any(note.startswith("VolumeZone's Score") for note in notes)
    assert any("MyPlugin" in note and "in-tree registry" in note for note in notes)
