"""PodTopologySpread and InterPodAffinity alone (through `predict`, from kubectl JSON), as read in the sources of
pkg/scheduler/framework/plugins/podtopologyspread and interpodaffinity."""

from __future__ import annotations

import pytest

from gpusched.errors import InputError
from gpusched.models.kube import parse_pod
from gpusched.planner.scheduler.framework import Code
from gpusched.planner.scheduler.plugins import interpodaffinity as ipa
from gpusched.planner.scheduler.plugins import podtopologyspread as pts
from gpusched.planner.scheduler.predict import predict

WEB = {"matchLabels": {"app": "web"}}


def node(name: str, **labels: str) -> dict:
    allocatable = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def pod(name: str, on: str = "", labels: dict | None = None, namespace: str = "default", **spec) -> dict:
    meta: dict = {"name": name, "namespace": namespace, "labels": labels if labels is not None else {"app": "web"}}
    for key in ("deletionTimestamp",):
        if key in spec:
            meta[key] = spec.pop(key)
    status = spec.pop("status", {"phase": "Running" if on else "Pending"})
    body = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}], **spec}
    if on:
        body["nodeName"] = on
    return {"kind": "Pod", "metadata": meta, "spec": body, "status": status}


def listed(*items: dict) -> dict:
    return {"kind": "List", "items": list(items)}


def spread(key: str = "zone", skew: int = 1, selector: dict | None = WEB, **extra) -> dict:
    constraint = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", **extra}
    if selector is not None:
        constraint["labelSelector"] = selector
    return constraint


def run(nodes: list[dict], pods: list[dict], target: dict):
    return predict(listed(*nodes), listed(*pods), target)


def verdicts(result) -> dict[str, tuple[str, str]]:
    return {v.name: (v.plugin, v.reasons[0] if v.reasons else "") for v in result.nodes}


ZONES = [node("a1", zone="a"), node("a2", zone="a"), node("b1", zone="b")]


# --- PodTopologySpread ----------------------------------------------------------------------------------------


def test_skew_counts_matching_pods_per_zone_and_the_pod_itself():
    result = run(ZONES, [pod("x", "a1")], pod("p", topologySpreadConstraints=[spread()]))
    assert result.feasible == ["b1"]
    assert verdicts(result)["a2"] == (pts.NAME, pts.ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert next(v for v in result.nodes if v.name == "a1").code == Code.UNSCHEDULABLE.value


def test_a_node_without_the_topology_key_is_unresolvable():
    nodes = [*ZONES, node("bare")]
    result = run(nodes, [], pod("p", topologySpreadConstraints=[spread()]))
    bare = next(v for v in result.nodes if v.name == "bare")
    assert (bare.reasons, bare.code) == ([pts.ERR_REASON_NODE_LABEL_NOT_MATCH], Code.UNRESOLVABLE.value)
    assert pts.ERR_REASON_NODE_LABEL_NOT_MATCH.endswith("(missing required label)")


def test_fewer_domains_than_min_domains_make_the_global_minimum_zero():
    pods = [pod("x", "a1"), pod("y", "b1")]
    assert run(ZONES, pods, pod("p", topologySpreadConstraints=[spread()])).feasible == ["a1", "a2", "b1"]
    result = run(ZONES, pods, pod("p", topologySpreadConstraints=[spread(minDomains=3)]))
    assert result.message == "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints. " + (
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


def test_an_empty_selector_counts_no_pod_and_terminating_pods_are_not_counted():
    many = [pod(f"x{i}", "a1") for i in range(3)]
    assert run(ZONES, many, pod("p", topologySpreadConstraints=[spread(selector={})])).feasible == ["a1", "a2", "b1"]
    leaving = [pod(f"x{i}", "a1", deletionTimestamp="2026-01-01T00:00:00Z") for i in range(3)]
    assert run(ZONES, leaving, pod("p", topologySpreadConstraints=[spread()])).feasible == ["a1", "a2", "b1"]


def test_other_namespaces_and_a_missing_selector_count_nothing():
    elsewhere = [pod(f"x{i}", "a1", namespace="other") for i in range(3)]
    assert run(ZONES, elsewhere, pod("p", topologySpreadConstraints=[spread()])).feasible == ["a1", "a2", "b1"]
    here = [pod(f"x{i}", "a1") for i in range(3)]
    assert run(ZONES, here, pod("p", topologySpreadConstraints=[spread(selector=None)])).feasible == ["a1", "a2", "b1"]


def test_node_affinity_policy_decides_which_nodes_are_domains():
    nodes = [node("a1", zone="a", gpu="l4"), node("b1", zone="b", gpu="a100")]
    target = {"nodeSelector": {"gpu": "a100"}}
    honor = run(nodes, [pod("x", "b1")], pod("p", topologySpreadConstraints=[spread()], **target))
    assert honor.feasible == ["b1"]  # zone a is no domain: the minimum is b's own 1
    ignore = run(nodes, [pod("x", "b1")], pod("p", topologySpreadConstraints=[spread(nodeAffinityPolicy="Ignore")],
                                             **target))  # fmt: skip
    assert ignore.feasible == []
    assert verdicts(ignore)["b1"] == (pts.NAME, pts.ERR_REASON_CONSTRAINTS_NOT_MATCH)


def test_node_taints_policy_honor_leaves_tainted_nodes_out():
    tainted = node("a1", zone="a")
    tainted["spec"] = {"taints": [{"key": "k", "effect": "NoSchedule"}]}
    nodes = [tainted, node("b1", zone="b")]
    target = pod("p", topologySpreadConstraints=[spread(nodeTaintsPolicy="Honor")])
    assert run(nodes, [pod("x", "b1")], target).feasible == ["b1"]
    assert run(nodes, [pod("x", "b1")], pod("p", topologySpreadConstraints=[spread()])).feasible == []


def test_schedule_anyway_and_the_default_constraints_only_score():
    many = [pod(f"x{i}", "a1") for i in range(3)]
    soft = spread(whenUnsatisfiable="ScheduleAnyway")
    assert run(ZONES, many, pod("p", topologySpreadConstraints=[soft])).feasible == ["a1", "a2", "b1"]
    assert run(ZONES, many, pod("p")).feasible == ["a1", "a2", "b1"]


def test_match_label_keys_narrow_the_selector_to_the_pods_value():
    pods = [pod("x", "a1", labels={"app": "web", "tier": "b"})]
    target = pod("p", labels={"app": "web", "tier": "a"}, topologySpreadConstraints=[spread(matchLabelKeys=["tier"])])
    assert run(ZONES, pods, target).feasible == ["a1", "a2", "b1"]
    same = pod("p", labels={"app": "web", "tier": "b"}, topologySpreadConstraints=[spread(matchLabelKeys=["tier"])])
    assert run(ZONES, pods, same).feasible == ["b1"]


def test_the_api_servers_refusals_are_refused():
    with pytest.raises(InputError):
        run(ZONES, [], pod("p", topologySpreadConstraints=[spread(skew=0)]))
    with pytest.raises(InputError):
        run(ZONES, [], pod("p", topologySpreadConstraints=[spread(minDomains=2, whenUnsatisfiable="ScheduleAnyway")]))
    with pytest.raises(InputError):
        run(ZONES, [], pod("p", topologySpreadConstraints=[spread(selector=None, matchLabelKeys=["tier"])]))


# --- InterPodAffinity -----------------------------------------------------------------------------------------


def affinity(kind: str, key: str = "kubernetes.io/hostname", selector: dict | None = WEB, **extra) -> dict:
    term = {"topologyKey": key, **extra}
    if selector is not None:
        term["labelSelector"] = selector
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_required_affinity_needs_a_matching_pod_in_the_domain():
    result = run(ZONES, [pod("x", "a1")], pod("p", labels={}, affinity=affinity("podAffinity")))
    assert result.feasible == ["a1"]
    assert verdicts(result)["b1"] == (ipa.NAME, ipa.ERR_REASON_AFFINITY)
    assert next(v for v in result.nodes if v.name == "b1").code == Code.UNRESOLVABLE.value
    zone = run(ZONES, [pod("x", "a1")], pod("p", labels={}, affinity=affinity("podAffinity", "zone")))
    assert zone.feasible == ["a1", "a2"]


def test_the_first_pod_of_a_group_may_go_where_the_topology_key_is():
    nodes = [*ZONES, node("bare")]
    result = run(nodes, [], pod("p", affinity=affinity("podAffinity", "zone")))
    assert result.feasible == ["a1", "a2", "b1"]
    lonely = run(nodes, [], pod("p", labels={"app": "db"}, affinity=affinity("podAffinity", "zone")))
    assert lonely.feasible == []


def test_required_anti_affinity_is_unschedulable_where_a_matching_pod_runs():
    result = run(ZONES, [pod("x", "a1")], pod("p", labels={}, affinity=affinity("podAntiAffinity", "zone")))
    assert result.feasible == ["b1"]
    assert verdicts(result)["a2"] == (ipa.NAME, ipa.ERR_REASON_ANTI_AFFINITY)
    assert next(v for v in result.nodes if v.name == "a2").code == Code.UNSCHEDULABLE.value


def test_an_existing_pods_anti_affinity_keeps_the_pod_out_of_its_domain():
    guard = pod("g", "a1", labels={"app": "db"}, affinity=affinity("podAntiAffinity", "zone"))
    result = run(ZONES, [guard], pod("p"))
    assert result.feasible == ["b1"]
    assert verdicts(result)["a2"] == (ipa.NAME, ipa.ERR_REASON_EXISTING_ANTI_AFFINITY)
    assert run(ZONES, [guard], pod("p", labels={"app": "db"})).feasible == ["a1", "a2", "b1"]


@pytest.mark.parametrize(
    ("extra", "counted"),
    [
        ({}, False),  # the owner's namespace only
        ({"namespaces": ["other"]}, True),
        ({"namespaceSelector": {}}, True),  # every namespace
        ({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}}, True),
        ({"namespaceSelector": {"matchLabels": {"team": "x"}}}, False),
    ],
)
def test_namespaces_and_namespace_selectors(extra, counted):
    target = pod("p", labels={}, affinity=affinity("podAntiAffinity", **extra))
    result = run(ZONES, [pod("x", "a1", namespace="other")], target)
    assert ("a1" not in result.feasible) is counted


def namespace(name: str, **labels: str) -> dict:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


@pytest.mark.parametrize(("team", "counted"), [("x", True), ("y", False)])
def test_a_namespace_selector_matches_the_namespaces_labels_when_given(team, counted):
    target = pod(
        "p", labels={}, affinity=affinity("podAntiAffinity", namespaceSelector={"matchLabels": {"team": team}})
    )
    found = listed(namespace("other", team="x"), namespace("default"))
    result = predict(listed(*ZONES), listed(pod("x", "a1", namespace="other")), target, namespaces_doc=found)
    assert ("a1" not in result.feasible) is counted
    assert result.not_modelled == []


def test_without_the_namespaces_a_selector_on_their_labels_may_differ():
    on_labels = affinity(
        "podAntiAffinity", namespaceSelector={"matchExpressions": [{"key": "team", "operator": "Exists"}]}
    )
    result = run(ZONES, [pod("x", "a1", namespace="other")], pod("p", labels={}, affinity=on_labels))
    assert result.may_differ and any(note.startswith("namespace labels:") for note in result.not_modelled)
    by_name = affinity("podAntiAffinity", namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "other"}})
    assert run(ZONES, [pod("x", "a1", namespace="other")], pod("p", labels={}, affinity=by_name)).not_modelled == []
    guard = pod("g", "a1", affinity=on_labels)  # an existing pod's anti-affinity reads them too
    assert run(ZONES, [guard], pod("p")).may_differ


def test_a_namespace_list_is_read_as_the_api_server_writes_it():
    with pytest.raises(InputError, match="appears more than once"):
        predict(listed(*ZONES), None, pod("p"), namespaces_doc=listed(namespace("a"), namespace("a")))
    with pytest.raises(InputError, match="namespaces"):
        predict(listed(*ZONES), None, pod("p"), namespaces_doc=listed(namespace("a", **{"bad key!": "v"})))


def test_mismatch_label_keys_exclude_the_pods_own_value():
    pods = [pod("x", "a1", labels={"app": "web", "tier": "a"}), pod("y", "b1", labels={"app": "web", "tier": "b"})]
    target = pod("p", labels={"tier": "a"}, affinity=affinity("podAntiAffinity", mismatchLabelKeys=["tier"]))
    assert run(ZONES, pods, target).feasible == ["a1", "a2"]


def test_preemption_evicts_the_pod_an_anti_affinity_rule_objects_to():
    low = pod("x", "a1", priority=0, status={"phase": "Running", "startTime": "2026-01-01T00:00:00Z"})
    target = pod("p", labels={}, priority=100, affinity=affinity("podAntiAffinity"))
    result = run([node("a1")], [low], target)
    assert result.nomination is not None and result.nomination.victims == ["default/x"]
    unhelpful = pod(
        "p", labels={}, priority=100, affinity=affinity("podAffinity", selector={"matchLabels": {"a": "b"}})
    )
    other = run([node("a1"), node("a2")], [pod("q", "a1", labels={"a": "b"}), low], unhelpful)
    assert other.feasible == ["a1"]
    lost = run([node("a2")], [low], unhelpful)
    assert lost.message and lost.message.endswith("preemption: 0/1 nodes are available: 1 Preemption is not helpful "
                                                  "for scheduling.")  # fmt: skip


def test_nominated_pods_count_only_on_the_node_being_filtered():
    """addGENominatedPods adds a node's own nominated pods to the state while that node is filtered: for a2, the
    pod nominated to a1 is not in zone a."""
    nominated = pod("n", labels={"app": "web"}, priority=10, status={"phase": "Pending", "nominatedNodeName": "a1"})
    target = pod("p", labels={}, affinity=affinity("podAntiAffinity"))
    assert run(ZONES, [nominated], target).feasible == ["a2", "b1"]
    spreader = run(ZONES, [nominated], pod("p", topologySpreadConstraints=[spread()]))
    assert spreader.feasible == ["a2", "b1"]
    assert verdicts(spreader)["a1"] == (pts.NAME, pts.ERR_REASON_CONSTRAINTS_NOT_MATCH)


# --- the plugins alone ----------------------------------------------------------------------------------------


def infos_of(nodes: list[dict], pods: list[dict], target: dict):
    from gpusched.models.kube import parse_nodes, parse_pod, parse_pods
    from gpusched.planner.scheduler.nodeinfo import snapshot

    me = parse_pod(target, "pod")
    return me, snapshot(parse_nodes(listed(*nodes), "nodes"), parse_pods(listed(*pods), "pods"), me)


def test_each_prefilter_skips_a_pod_with_nothing_to_check():
    me, infos = infos_of(
        ZONES, [pod("x", "a1")], pod("p", topologySpreadConstraints=[spread(whenUnsatisfiable="ScheduleAnyway")])
    )
    assert pts.PodTopologySpread.for_pod(me, infos) is None
    assert ipa.InterPodAffinity.for_pod(me, infos) is None
    guard = pod("g", "b1", labels={"app": "db"}, affinity=affinity("podAntiAffinity"))
    me, infos = infos_of(ZONES, [guard], pod("p"))
    assert ipa.InterPodAffinity.for_pod(me, infos) is not None  # an existing pod's anti-affinity selects it


def test_removing_a_pod_from_the_node_updates_the_counts_as_remove_pod_does():
    me, infos = infos_of(
        ZONES, [pod("x", "a1"), pod("y", "a2")], pod("p", labels={}, affinity=affinity("podAntiAffinity", "zone"))
    )
    plugin = ipa.InterPodAffinity.for_pod(me, infos)
    a1 = next(info for info in infos if info.name == "a1")
    assert plugin.filter(me, a1).reasons == (ipa.ERR_REASON_ANTI_AFFINITY,)
    assert plugin.filter(me, a1.without(list(a1.pods))).reasons == (ipa.ERR_REASON_ANTI_AFFINITY,)  # y is in zone a
    me, infos = infos_of(ZONES, [pod("x", "a1"), pod("z", "b1")], pod("p", topologySpreadConstraints=[spread()]))
    spreader = pts.PodTopologySpread.for_pod(me, infos)
    a1 = next(info for info in infos if info.name == "a1")
    assert spreader.filter(me, a1).ok  # a 1, b 1: skew 1
    leaving = pod("x", "a1", deletionTimestamp="2026-01-01T00:00:00Z")
    me, infos = infos_of(ZONES, [leaving, pod("z", "b1")], pod("p", topologySpreadConstraints=[spread()]))
    spreader = pts.PodTopologySpread.for_pod(me, infos)
    b1 = next(info for info in infos if info.name == "b1")
    assert not spreader.filter(me, b1).ok  # the terminating x is not counted: a 0, b 1
    assert spreader.filter(me, b1.without(list(b1.pods))).ok  # z removed from b1: a 0, b 0


@pytest.mark.parametrize(("version", "retried"), [("1.34", False), ("1.35", False), ("1.37", True)])
def test_evicting_the_pod_whose_anti_affinity_kept_the_preemptor_out_retries_it_only_from_1_36(version, retried):
    """InterPodAffinity's queueing hint for a deleted pod: up to 1.35 it requeues only when the pending pod's own
    anti-affinity selected the deleted pod, so the preemptor waits in the unschedulable queue (kubernetes#135325)."""
    guard = pod("g", "a1", labels={"app": "db"}, affinity=affinity("podAntiAffinity"), priority=0)
    tainted = {**node("t1"), "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}}
    for nodes in ([ZONES[0]], [ZONES[0], tainted]):  # TaintToleration watches no deleted pods: no requeue from it
        result = predict(listed(*nodes), listed(guard), pod("p", priority=1000), version)
        assert result.nomination is not None and result.nomination.victims == ["default/g"]
        assert result.nomination.retried is retried


def test_the_preemptors_own_anti_affinity_retries_it_in_every_release():
    guard = pod("g", "a1", labels={"app": "web"}, priority=0)
    for version in ("1.34", "1.37"):
        target = pod("p", labels={"app": "api"}, affinity=affinity("podAntiAffinity"), priority=1000)
        result = predict(listed(ZONES[0]), listed(guard), target, version)
        assert result.nomination is not None and result.nomination.retried is True


TEAM_ABSENT = {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}


@pytest.mark.parametrize(("version", "first"), [("1.34", True), ("1.35", True), ("1.37", False)])
def test_up_to_1_35_an_incoming_pods_namespace_selector_is_also_tried_on_no_labels(version, first):
    """mergeAffinityTermNamespacesIfNotEmpty took the term by value up to 1.35: the selector stays beside the namespaces
    it listed, and AffinityTerm.Matches(pod, nil) accepts any namespace for a DoesNotExist."""
    target = pod("p", affinity=affinity("podAffinity", namespaceSelector=TEAM_ABSENT), namespace="mine")
    found = listed(namespace("mine", team="x"))
    result = predict(listed(*ZONES), None, target, version, namespaces_doc=found)
    assert result.feasible == (["a1", "a2", "b1"] if first else [])  # the first of its group only if it matches itself


@pytest.mark.parametrize("version", [(1, 34), (1, 37)])
def test_the_queueing_hint_reads_no_namespace_labels(version):
    """GetAffinityTerms keeps the namespaceSelector and the hint matches it against no labels at all."""

    def kube(selector: dict) -> object:
        return parse_pod(pod("p", labels={}, affinity=affinity("podAntiAffinity", namespaceSelector=selector)), "pod")

    victim = parse_pod(pod("x", "a1", namespace="other"), "victim")
    on_team = kube({"matchLabels": {"team": "x"}})
    assert not ipa.requeued_by_deletion(on_team, victim, version)  # `other` may well carry team=x: not looked up
    assert ipa.requeued_by_deletion(kube(TEAM_ABSENT), victim, version)
    assert ipa.requeued_by_deletion(kube({}), victim, version)
