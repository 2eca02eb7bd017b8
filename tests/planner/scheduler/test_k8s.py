"""`gpusched k8s`: kube-scheduler's verdict from kubectl JSON, word for word per version (1.34–1.37)."""

from __future__ import annotations

import pytest

from gpusched.errors import InputError
from gpusched.planner.scheduler.predict import parse_version, predict, server_release

CP = "cc-lab-control-plane"
GPU = "example.com/gpu"
SEED_DETAIL = f"{CP} Insufficient {GPU} ({GPU}: requested 2, free 1 of 4)"
MSG_137 = (
    f"0/1 nodes are available: 1 Insufficient {GPU}. "
    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
)
MSG_136 = (
    f"0/1 nodes are available: 1 Insufficient {GPU}. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
)


# --- kubectl-shaped fixtures -----------------------------------------------------------------------------------


def node(name=CP, gpus="4", cpu="8", memory="16Gi", pods="110", labels=None, taints=None, cordoned=False, **extra):
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **({GPU: gpus} if gpus is not None else {}), **extra}
    spec = {"taints": taints} if taints else {}
    if cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }


def container(requests=None, limits=None, name="main", **extra):
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def pod(name, gpus=None, on=None, phase=None, priority=None, start=None, containers=None, namespace="default", **spec):
    """A Pod as `kubectl get -o json` shows it; `gpus` is a limit (the API server defaults the request to it)."""
    if containers is None:
        containers = [container(limits={GPU: str(gpus)})] if gpus is not None else [container()]
    body = {"containers": containers, **spec}
    if on:
        body["nodeName"] = on
    if priority is not None:
        body["priority"] = priority
    status = {"phase": phase or ("Running" if on else "Pending")}
    if start:
        status["startTime"] = start
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
        "status": status,
    }


def listed(*items):
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {"resourceVersion": ""}}


def seed_pods():
    return [pod("gpu-a", 2, on=CP), pod("gpu-b", 1, on=CP), pod("gpu-c", 2)]


@pytest.fixture
def k8s(gpusched, write):
    """Write nodes, pods and the pod into files and run `gpusched k8s` on them."""

    def run(nodes, pods, target, *args):
        paths = ["--nodes", write("nodes.json", nodes), write("pod.json", target)]
        if pods is not None:
            paths += ["--pods", write("pods.json", pods)]
        return gpusched("k8s", *paths, *args)

    return run


def message(nodes, pods, target, version="1.37"):
    return predict(nodes, pods, target, version).message


# --- the seed walk-through -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "expected"), [("1.37", MSG_137), ("1.36", MSG_136), ("1.35", MSG_136), ("1.34", MSG_136)]
)
def test_seed_walkthrough_gpu_c_is_pending(k8s, version, expected):
    pods = seed_pods()
    result = k8s(listed(node()), listed(*pods), pods[2], "--k8s-version", version)
    assert result.exit_code == 1
    assert result.lines == [SEED_DETAIL, f"FailedScheduling: {expected}"]
    assert result.lines[1].startswith(f"FailedScheduling: 0/1 nodes are available: 1 Insufficient {GPU}.")


def test_seed_walkthrough_fits_once_gpu_a_is_deleted(k8s):
    pods = seed_pods()
    result = k8s(listed(node()), listed(*pods[1:]), pods[2])
    assert result.exit_code == 0
    assert result.lines == [f"fits: {CP}"]


def test_seed_walkthrough_json(k8s):
    pods = seed_pods()
    data = k8s(listed(node()), listed(*pods), pods[2], "--json").json()
    assert data["message"] == MSG_137 and data["event"] == MSG_137
    assert data["requests"] == {GPU: 2} and data["feasible"] == [] and data["nomination"] is None
    assert data["fits"] is False and data["details"] == [SEED_DETAIL]
    [verdict] = data["nodes"]
    assert verdict["plugin"] == "NodeResourcesFit" and verdict["code"] == "Unschedulable"
    assert verdict["shortfalls"] == [
        {
            "resource": GPU,
            "reason": f"Insufficient {GPU}",
            "requested": 2,
            "free": 1,
            "allocatable": 4,
            "unresolvable": False,
            "nominated": 0,
        }
    ]


def test_the_predicted_pod_is_not_counted_against_itself():
    """A pod listed in --pods (even bound already) is excluded by namespace/name."""
    target = pod("gpu-c", 2, on=CP)
    assert predict(listed(node()), listed(pod("gpu-a", 2, on=CP), target), target).feasible == [CP]


# --- the pod's requests ----------------------------------------------------------------------------------------


def test_init_container_peak_wins_over_the_containers_sum():
    target = pod(
        "p",
        containers=[container({"cpu": "1", "memory": "1Gi"})],
        initContainers=[container({"cpu": "3"}, name="init")],
    )
    assert predict(listed(node()), None, target).requests == {"cpu": 3000, "memory": 2**30}


def test_sidecars_add_to_the_sum_and_to_later_init_containers():
    """sidecar 1 cpu + containers 1 = 2; the init container after the sidecar uses 2 + 1 = 3: the peak wins."""
    init = [
        container({"cpu": "500m"}, name="before"),
        container({"cpu": "1"}, name="sidecar", restartPolicy="Always"),
        container({"cpu": "2"}, name="after"),
    ]
    target = pod("p", containers=[container({"cpu": "1"})], initContainers=init)
    assert predict(listed(node()), None, target).requests == {"cpu": 3000}
    target = pod("p", containers=[container({"cpu": "4"})], initContainers=init)
    assert predict(listed(node()), None, target).requests == {"cpu": 5000}


def test_overhead_is_added():
    target = pod(
        "p", containers=[container({"cpu": "250m", "memory": "64Mi"})], overhead={"cpu": "250m", "memory": "64Mi"}
    )
    assert predict(listed(node()), None, target).requests == {"cpu": 500, "memory": 128 * 2**20}


def test_requests_default_to_limits_but_explicit_requests_stay():
    target = pod("p", containers=[container({"cpu": "100m"}, {"cpu": "2", GPU: "1", "memory": "1Gi"})])
    assert predict(listed(node()), None, target).requests == {"cpu": 100, GPU: 1, "memory": 2**30}


def test_pod_level_requests_replace_cpu_and_memory_only():
    target = pod("p", containers=[container({"cpu": "1", GPU: "1"}, {GPU: "1"})], resources={"requests": {"cpu": "3"}})
    assert predict(listed(node()), None, target).requests == {"cpu": 3000, GPU: 1}


# --- what the node has left ------------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_frees_its_gpus(k8s, phase):
    pods = [pod("gpu-a", 2, on=CP, phase=phase), pod("gpu-b", 1, on=CP)]
    result = k8s(listed(node()), listed(*pods), pod("gpu-c", 2))
    assert result.exit_code == 0 and result.lines == [f"fits: {CP}"]


def test_a_resource_only_in_capacity_is_not_schedulable():
    """Found by `gpusched conformance`: kube-scheduler reads allocatable only; capacity is no stand-in."""
    doc = node()
    del doc["status"]["allocatable"][GPU]
    result = predict(listed(doc), None, pod("gpu-c", 1))
    assert result.feasible == []
    assert result.message.startswith(f"0/1 nodes are available: 1 Insufficient {GPU}. preemption: ")


def test_several_reasons_on_one_node_are_all_counted(k8s):
    target = pod("big", containers=[container({"cpu": "10", "memory": "32Gi"})])
    result = k8s(listed(node(), node("n2", cpu="4")), None, target)
    assert result.exit_code == 1
    assert result.lines[:2] == [
        f"{CP} Insufficient cpu (cpu: requested 10, free 8 of 8), Insufficient memory (memory: requested 32Gi, free 16Gi of 16Gi)",
        "n2 Insufficient cpu (cpu: requested 10, free 4 of 4), Insufficient memory (memory: requested 32Gi, free 16Gi of 16Gi)",
    ]
    assert result.lines[2] == (
        "FailedScheduling: 0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_too_many_pods(k8s):
    pods = [pod("a", on=CP), pod("b", on=CP)]
    result = k8s(listed(node(pods="2")), listed(*pods), pod("c"), "--k8s-version", "1.36")
    assert result.lines == [
        f"{CP} Too many pods (pods: requested 1, free 0 of 2)",
        (
            "FailedScheduling: 0/1 nodes are available: 1 Too many pods. no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        ),
    ]


def test_reasons_sort_as_plain_strings():
    """`10 x` sorts before `2 y`: the histogram is sorted as text, not by count."""
    nodes = [node(f"n{i}", gpus="1") for i in range(10)] + [node("c1", cordoned=True), node("c2", cordoned=True)]
    text = message(listed(*nodes), None, pod("p", 2), "1.36")
    assert text.startswith(f"0/12 nodes are available: 10 Insufficient {GPU}, 2 node(s) were unschedulable. ")


# --- other filters ---------------------------------------------------------------------------------------------


def test_cordoned_node(k8s):
    result = k8s(listed(node(cordoned=True)), None, pod("p", 1))
    assert result.exit_code == 1
    assert result.lines == [
        f"{CP} node(s) were unschedulable",
        (
            "FailedScheduling: 0/1 nodes are available: 1 node(s) were unschedulable. "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        ),
    ]


def test_a_toleration_for_the_cordon_taint_passes():
    tolerant = pod(
        "p", 1, tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    )
    assert predict(listed(node(cordoned=True)), None, tolerant).feasible == [CP]


CONTROL_PLANE_TAINT = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("1.34.1", "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
        ("1.34.0", "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
        ("1.34.2", "node(s) had untolerated taint(s)"),
        ("1.34", "node(s) had untolerated taint(s)"),
        ("1.37", "node(s) had untolerated taint(s)"),
    ],
)
def test_untolerated_taint_wording_by_version(k8s, version, reason):
    result = k8s(listed(node(taints=CONTROL_PLANE_TAINT)), None, pod("p", 1), "--k8s-version", version)
    assert result.exit_code == 1
    assert result.lines[0] == f"{CP} {reason}"
    assert result.lines[1].startswith(f"FailedScheduling: 0/1 nodes are available: 1 {reason}. ")
    assert result.lines[1].endswith("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_tolerations_and_prefer_no_schedule():
    """PreferNoSchedule never filters; kubectl's extra fields (timeAdded, tolerationSeconds) are fine."""
    taints = [
        {"key": "soft", "effect": "PreferNoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"},
    ]
    tolerations = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    ]
    assert predict(listed(node(taints=taints)), None, pod("p", 1, tolerations=tolerations)).feasible == [CP]
    assert not predict(listed(node(taints=taints)), None, pod("p", 1)).feasible


def test_node_selector_mismatch(k8s):
    nodes = listed(node(labels={"gpu": "a100"}), node("n2", labels={"gpu": "h100"}))
    result = k8s(nodes, None, pod("p", 1, nodeSelector={"gpu": "h100"}))
    assert result.exit_code == 0 and result.lines == ["fits: n2"]
    result = k8s(nodes, None, pod("p", 1, nodeSelector={"gpu": "l4"}))
    assert result.lines == [
        f"{CP} node(s) didn't match Pod's node affinity/selector",
        "n2 node(s) didn't match Pod's node affinity/selector",
        (
            "FailedScheduling: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        ),
    ]


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key, operator, *values):
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


AFFINITY_NODES = listed(
    node("a", labels={"zone": "east", "gen": "3"}),
    node("b", labels={"zone": "west", "gen": "5", "spot": "true"}),
    node("c", labels={"gen": "x"}),
)


@pytest.mark.parametrize(
    ("terms", "feasible"),
    [
        ([{"matchExpressions": [expr("zone", "In", "east", "north")]}], ["a"]),
        ([{"matchExpressions": [expr("zone", "NotIn", "east")]}], ["b", "c"]),
        ([{"matchExpressions": [expr("zone", "Exists")]}], ["a", "b"]),
        ([{"matchExpressions": [expr("spot", "DoesNotExist")]}], ["a", "c"]),
        ([{"matchExpressions": [expr("gen", "Gt", "4")]}], ["b"]),
        ([{"matchExpressions": [expr("gen", "Lt", "4")]}], ["a"]),
        ([{"matchExpressions": [expr("zone", "Exists"), expr("gen", "Lt", "4")]}], ["a"]),  # ANDed
        (
            [{"matchExpressions": [expr("zone", "In", "east")]}, {"matchExpressions": [expr("gen", "In", "x")]}],
            ["a", "c"],
        ),  # ORed
        ([{}], []),  # an empty term matches nothing
    ],
)
def test_node_affinity_match_expressions(terms, feasible):
    assert predict(AFFINITY_NODES, None, pod("p", 1, affinity=required(*terms))).feasible == feasible


def test_node_affinity_and_node_selector_both_apply():
    target = pod(
        "p", 1, nodeSelector={"zone": "west"}, affinity=required({"matchExpressions": [expr("gen", "Lt", "4")]})
    )
    result = predict(AFFINITY_NODES, None, target)
    assert not result.feasible
    assert result.message.startswith("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. ")


def test_match_fields_metadata_name_narrows_the_nodes_first(k8s):
    target = pod("p", 9, affinity=required({"matchFields": [expr("metadata.name", "In", "b")]}))
    result = k8s(AFFINITY_NODES, None, target)
    assert result.lines == [
        "a node(s) didn't satisfy plugin(s) [NodeAffinity]",
        f"b Insufficient {GPU} ({GPU}: requested 9, free 4 of 4)",
        "c node(s) didn't satisfy plugin(s) [NodeAffinity]",
        (
            f"FailedScheduling: 0/3 nodes are available: 1 Insufficient {GPU}, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        ),
    ]
    assert predict(
        AFFINITY_NODES, None, pod("p", 1, affinity=required({"matchFields": [expr("metadata.name", "NotIn", "a")]}))
    ).feasible == ["b", "c"]


def test_node_name_runs_first_in_137_and_after_the_cordon_before():
    nodes = listed(node(cordoned=True))
    target = pod("p", 1, nodeName="elsewhere")
    assert predict(nodes, None, target, "1.36").nodes[0].reasons == ["node(s) were unschedulable"]
    assert predict(nodes, None, target, "1.37").nodes[0].reasons == ["node(s) didn't satisfy plugin(s) [NodeName]"]
    assert predict(listed(node(), node("elsewhere")), None, target, "1.36").nodes[0].reasons == [
        "node(s) didn't match the requested node name"
    ]


# --- PostFilter: preemption ------------------------------------------------------------------------------------


def test_unresolvable_when_the_request_exceeds_allocatable(k8s):
    result = k8s(listed(node()), listed(*seed_pods()[:2]), pod("gpu-c", 5), "--k8s-version", "1.36")
    assert result.lines == [
        f"{CP} Insufficient {GPU} ({GPU}: requested 5, free 1 of 4)",
        (
            f"FailedScheduling: 0/1 nodes are available: 1 Insufficient {GPU}. no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        ),
    ]
    assert predict(listed(node()), None, pod("gpu-c", 5)).nodes[0].code == "UnschedulableAndUnresolvable"


def test_a_node_without_the_resource_is_unresolvable():
    text = message(listed(node(gpus=None)), None, pod("p", 1))
    assert text == (
        f"0/1 nodes are available: 1 Insufficient {GPU}. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def preempting_pods(a_start="2025-01-01T00:00:00Z", b_start="2025-01-02T00:00:00Z"):
    return [pod("gpu-a", 2, on=CP, start=a_start), pod("gpu-b", 1, on=CP, start=b_start)]


@pytest.mark.parametrize(
    ("version", "tail"),
    [
        ("1.36", ""),
        ("1.37", f" preemption: found a potential placement for pod on node {CP}, preempting 1 victims"),
    ],
)
def test_preemption_with_a_lower_priority_victim(k8s, version, tail):
    result = k8s(listed(node()), listed(*preempting_pods()), pod("gpu-c", 2, priority=100), "--k8s-version", version)
    assert result.exit_code == 1
    assert result.lines == [
        SEED_DETAIL,
        f"FailedScheduling: 0/1 nodes are available: 1 Insufficient {GPU}.{tail}",
        f"nominated: {CP} (preempting default/gpu-b)",
    ]


def test_victims_are_reprieved_most_important_first():
    """Equal priority: the earlier-started pod is put back first, so the later one is evicted."""
    target = pod("gpu-c", 2, priority=100)
    early_a = predict(listed(node()), listed(*preempting_pods()), target)
    assert early_a.nomination.victims == ["default/gpu-b"]
    early_b = predict(listed(node()), listed(*preempting_pods("2025-01-03T00:00:00Z")), target)
    assert early_b.nomination.victims == ["default/gpu-a"]
    higher_b = listed(pod("gpu-a", 2, on=CP), pod("gpu-b", 1, on=CP, priority=50))
    assert predict(listed(node()), higher_b, target).nomination.victims == ["default/gpu-a"]


def test_equal_priority_pods_are_never_victims(k8s):
    result = k8s(listed(node()), listed(*seed_pods()[:2]), pod("gpu-c", 2, priority=0))
    assert result.lines[-1] == f"FailedScheduling: {MSG_137}"


def test_preemption_picks_the_node_with_the_least_important_victims():
    nodes = listed(node("n1", gpus="1"), node("n2", gpus="1"), node("n3", gpus="2"))
    pods = listed(
        pod("v1", 1, on="n1", priority=10),
        pod("v2", 1, on="n2", priority=5),
        pod("v3", 1, on="n3", priority=7),
        pod("v4", 1, on="n3", priority=1),
    )
    result = predict(nodes, pods, pod("p", 1, priority=100))
    assert result.nomination.node == "n3" and result.nomination.victims == ["default/v4"]  # top victim 1 < 5 < 10
    result = predict(nodes, pods, pod("p", 1, priority=6))  # n1 and n3's v3 are not lower: only n2 and n3 (v4)
    assert result.nomination.node == "n3"


def test_preemption_then_prefers_the_smallest_priority_sum():
    nodes = listed(node("n1", gpus="2"), node("n2", gpus="2"), node("n3", gpus="2"))
    pods = listed(
        pod("v1", 2, on="n1", priority=10),
        pod("v2", 2, on="n2", priority=5),
        pod("v3", 1, on="n3", priority=5),
        pod("v4", 1, on="n3", priority=5),
    )
    result = predict(nodes, pods, pod("p", 2, priority=100))
    assert result.nomination.node == "n2" and result.nomination.victims == ["default/v2"]
    assert result.message.endswith("preemption: found a potential placement for pod on node n2, preempting 1 victims")


def test_preemption_ties_go_to_fewer_victims_then_the_latest_start():
    nodes = listed(node("n1", gpus="2"), node("n2", gpus="2"), node("n3", gpus="2"))
    pods = listed(
        pod("a1", 1, on="n1", start="2025-01-01T00:00:00Z"),
        pod("a2", 1, on="n1", start="2025-01-01T00:00:00Z"),
        pod("b1", 2, on="n2", start="2025-01-01T00:00:00Z"),
        pod("c1", 2, on="n3", start="2025-03-01T00:00:00Z"),
    )
    result = predict(nodes, pods, pod("p", 2, priority=1))
    assert result.nomination.node == "n3" and result.nomination.victims == ["default/c1"]


def test_preemption_reports_the_filter_reason_when_evicting_all_is_not_enough():
    pods = listed(pod("gpu-a", 3, on=CP, priority=200), pod("gpu-b", 1, on=CP))
    text = message(listed(node()), pods, pod("gpu-c", 2, priority=100), "1.35")
    assert text == (
        f"0/1 nodes are available: 1 Insufficient {GPU}. no new claims to deallocate, "
        f"preemption: 0/1 nodes are available: 1 Insufficient {GPU}."
    )


def test_preemption_mixes_tried_and_untried_nodes():
    nodes = listed(node(), node("tainted", taints=CONTROL_PLANE_TAINT))
    text = message(nodes, listed(*seed_pods()[:2]), pod("gpu-c", 2))
    assert text == (
        f"0/2 nodes are available: 1 Insufficient {GPU}, 1 node(s) had untolerated taint(s). preemption: 0/2 nodes are "
        "available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (
            "1.36",
            f"0/1 nodes are available: 1 Insufficient {GPU}. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
        ),
        (
            "1.37",
            f"0/1 nodes are available: 1 Insufficient {GPU}. preemption: not eligible due to preemptionPolicy=Never.",
        ),
    ],
)
def test_preemption_policy_never(k8s, version, expected):
    target = pod("gpu-c", 2, priority=100, preemptionPolicy="Never")
    result = k8s(listed(node()), listed(*preempting_pods()), target, "--k8s-version", version)
    assert result.exit_code == 1 and result.lines[-1] == f"FailedScheduling: {expected}"


def test_no_nodes_at_all(k8s):
    result = k8s(listed(), None, pod("p", 1))
    assert result.exit_code == 1 and result.lines == ["FailedScheduling: no nodes available to schedule pods"]


def test_a_long_message_is_cut_for_the_event_only():
    """1.34.1 names each taint, so thirty distinct taints make a message past the event's 1024 bytes."""
    nodes = [
        node(f"t-{i:03}", taints=[{"key": f"example.com/{i}-" + "k" * 60, "value": "v", "effect": "NoSchedule"}])
        for i in range(30)
    ]
    result = predict(listed(*nodes), None, pod("p", 1), "1.34.1")
    assert len(result.message.encode()) > 1024
    assert len(result.event.encode()) == 1024 and result.event.endswith(" ...")
    assert result.message.startswith(result.event[:-4])


# --- input shapes and bad input --------------------------------------------------------------------------------


def test_single_objects_and_typed_lists_are_accepted(k8s):
    pods = seed_pods()
    node_list = {"kind": "NodeList", "items": [{k: v for k, v in node().items() if k != "kind"}]}
    result = k8s(node(), {"kind": "PodList", "items": pods[:2]}, listed(pods[2]))
    assert result.exit_code == 1 and result.lines[0] == SEED_DETAIL
    result = k8s(node_list, pods[0], pods[2])
    assert result.exit_code == 0 and result.lines == [f"fits: {CP}"]


@pytest.mark.parametrize(
    ("which", "content", "expected"),
    [
        ("pod", "{not json", "pod.json: malformed JSON at line 1 column 2"),
        ("nodes", listed(pod("x")), "nodes.json: items[0].kind: expected a Node, got 'Pod'"),
        ("nodes", pod("x"), "nodes.json: kind: expected Node, NodeList or List, got 'Pod'"),
        ("nodes", listed(node(gpus="abc")), f"nodes.json: items[0].status.allocatable.{GPU}: expected a quantity"),
        (
            "pod",
            pod("p", containers=[container({"cpu": "abc"})]),
            "pod.json: spec.containers[0].resources.requests.cpu: expected a quantity",
        ),
        (
            "pods",
            listed(pod("a", 1, on=CP), {**pod("b", 1, on=CP), "metadata": {}}),
            "pods.json: items[1].metadata.name: missing",
        ),
        ("pod", listed(pod("a"), pod("b")), "pod.json: items: expected exactly one Pod, found 2"),
        (
            "pod",
            pod("p", 1, resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}]),
            "pod.json: spec.resourceClaims: ResourceClaims need --objects",
        ),
        ("pod", pod("p", 1, tolerations=[{"operator": "Sometimes"}]), "pod.json: spec.tolerations[0].operator:"),
        ("pod", pod("p", containers=[container(limits={GPU: [1]})]), f"limits.{GPU}: expected a quantity"),
        ("pod", pod("p", 1, priority="high"), "pod.json: spec.priority: expected a whole number"),
        ("nodes", listed({**node(), "spec": []}), "nodes.json: items[0].spec: expected an object"),
        (
            "pod",
            pod("p", 1, affinity=required({"matchExpressions": [expr("a", "Near", "b")]})),
            "matchExpressions.0.operator",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_file_and_field(k8s, write, which, content, expected):
    docs = {"nodes": listed(node()), "pods": listed(), "pod": pod("p", 1)}
    docs[which] = content
    result = k8s(docs["nodes"], docs["pods"], docs["pod"])
    assert result.exit_code == 2 and result.stdout == ""
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")


def test_a_missing_file_and_a_bad_version_exit_2(gpusched, write, tmp_path):
    nodes, target = write("nodes.json", listed(node())), write("pod.json", pod("p", 1))
    result = gpusched("k8s", "--nodes", tmp_path / "absent.json", target)
    assert result.exit_code == 2 and "absent.json: no such file" in result.stderr
    result = gpusched("k8s", "--nodes", nodes, target, "--k8s-version", "1.30")
    assert result.exit_code == 2 and "--k8s-version: expected 1.34 to 1.37" in result.stderr


def test_predict_names_documents_by_source():
    with pytest.raises(InputError, match=r"^cluster-nodes: items\[0\]\.metadata\.name: missing"):
        predict(listed({"kind": "Node", "metadata": {}}), None, pod("p"), sources=("cluster-nodes", "pods", "pod"))


@pytest.mark.parametrize(("text", "parsed"), [("1.37", (1, 37)), ("v1.34.1", (1, 34, 1)), ((1, 35), (1, 35))])
def test_parse_version(text, parsed):
    assert parse_version(text) == parsed


@pytest.mark.parametrize(
    ("reported", "release"),
    [("v1.35.4", (1, 35, 4)), ("v1.34.2-eks-1f2e3d4", (1, 34, 2)), ("v1.37.0+k3s1", (1, 37, 0)), ("1.36", (1, 36))],
)
def test_the_release_a_server_reports(reported, release):
    assert server_release(reported) == release


@pytest.mark.parametrize("reported", ["v1.30.2", "v1.38.0", "v0.0.0-master+$Format:%H$", "unknown"])
def test_a_server_release_outside_the_modelled_ones_is_refused(reported):
    with pytest.raises(InputError, match=r"gpusched predicts 1\.34 to 1\.37: name one of them"):
        server_release(reported)
