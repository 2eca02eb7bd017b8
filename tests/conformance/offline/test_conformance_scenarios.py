"""The differential generator's DRA and preemption scenarios, and how outcomes agree; no cluster needed."""

from __future__ import annotations

import collections

import pytest
from rich.console import Console

from gpusched.cli.conformance import _render_report
from gpusched.conformance.differential import (
    ClaimCheck,
    ConformanceReport,
    Disagreement,
    PluginCount,
    PodVerdict,
    _scheduler_words,
    _stamped,
    shrink,
)
from gpusched.conformance.scenarios import REFUSED, ConformanceScenario, generate
from gpusched.errors import InputError
from gpusched.models.kube import parse_pod
from gpusched.planner.dra.objects import objects_from

RESULT = {"request": "r0", "driver": "gpu.nvidia.com", "pool": "n0", "device": "gpu-0"}


def scenarios(kind: str, seed: int = 11, count: int = 120):
    return [s for s in (generate(seed, i, "ns") for i in range(count)) if s.kind == kind]


def test_a_third_of_the_scenarios_carry_dra_objects_and_some_preempt():
    kinds = collections.Counter(generate(3, i, "ns").kind for i in range(600))
    assert 170 <= kinds["dra"] <= 230 and kinds["preemption"] >= 80 and kinds["plain"] >= 200


def test_dra_objects_are_what_gpusched_reads_and_every_pod_claim_exists():
    for scenario in scenarios("dra"):
        assert 2 <= len(scenario.nodes) <= 4 and 2 <= len(scenario.pods) <= 6
        drawn = [obj for obj in scenario.objects if REFUSED not in obj["metadata"].get("annotations", {})]
        objects = objects_from([("scenario", drawn)], pods=False)  # refuses anything malformed
        assert set(objects.classes) == {"gpu.nvidia.com", "mig.nvidia.com"}
        claims = {claim.metadata.name for claim in objects.claims}
        templates = {template.metadata.name for template in objects.templates.values()}
        for pod in scenario.pods:
            for entry in pod["spec"].get("resourceClaims", []):
                named = entry.get("resourceClaimName") or entry.get("resourceClaimTemplateName")
                assert named in claims | templates or named.endswith("-absent")  # absent: PreEnqueue holds the pod


def test_gpusched_refuses_exactly_the_pods_drawn_for_the_api_server_to_refuse():
    drawn = [pod for i in range(300) for pod in generate(5, i, "ns").pods]
    refused = [pod for pod in drawn if REFUSED in pod["metadata"].get("annotations", {})]
    assert 20 <= len(refused) < len(drawn) // 10
    for pod in drawn:
        if pod in refused:
            with pytest.raises(InputError):
                parse_pod(pod, "pod")
        else:
            parse_pod(pod, "pod")


def test_the_generator_draws_every_class_of_issue_12():
    pods = [pod for i in range(300) for pod in generate(5, i, "ns").pods]
    specs = [pod["spec"] for pod in pods]
    containers = [c for spec in specs for c in [*spec["containers"], *spec.get("initContainers", [])]]
    assert sum("schedulingGates" in spec for spec in specs) > 10
    assert sum(any("hostPort" in port for port in c.get("ports", [])) for c in containers) > 20
    assert sum(c["resources"].get("requests", {}).get("memory") == "0.1Gi" for c in containers) > 20
    text = str(specs)
    assert "'1_000'" in text and "'9223372036854775808'" in text
    conflicting = [t for spec in specs for t in str(spec.get("affinity", "")).split("matchFields")[1:]
                   if t.count("metadata.name") == 2]  # fmt: skip
    assert conflicting


def test_nvidia_slices_name_devices_as_the_driver_does():
    devices = [
        d
        for s in scenarios("dra")
        for o in s.objects
        if o["kind"] == "ResourceSlice"
        for d in o["spec"].get("devices", [])
    ]
    gpus = [d for d in devices if d["attributes"]["type"]["string"] == "gpu"]
    migs = [d for d in devices if d["attributes"]["type"]["string"] == "mig"]
    assert gpus and migs
    assert all(d["name"] == f"gpu-{d['attributes']['index']['int']}" for d in gpus)
    assert {d["name"].split("-mig-")[1] for d in migs} >= {"1g10gb-19-0", "3g40gb-9-4", "7g80gb-0-0"}
    assert all(f"memorySlice{d['name'].rsplit('-', 1)[1]}" in d["capacity"] for d in migs)


def test_preemption_scenarios_keep_the_default_grace_period_and_preempt_late():
    for scenario in scenarios("preemption"):
        assert all("terminationGracePeriodSeconds" not in pod["spec"] for pod in scenario.pods)
    late = [
        pod["spec"].get("priorityClassName") for s in scenarios("preemption") for pod in s.pods[len(s.pods) // 2 + 1 :]
    ]
    assert collections.Counter(late)["gpusched-urgent"] > len(late) // 4


def test_shrinking_drops_a_nodes_slices_and_claims_no_pod_names_any_more():
    def obj(kind, name, **spec):
        return {"kind": kind, "metadata": {"name": name}, "spec": spec}

    def pod(name, *entries):
        return {"metadata": {"name": name}, "spec": {"resourceClaims": [dict(entry) for entry in entries]}}

    shared, own, template = ({"name": "a", "resourceClaimName": "shared"}, {"name": "b", "resourceClaimName": "own"},
                             {"name": "c", "resourceClaimTemplateName": "t"})  # fmt: skip
    scenario = ConformanceScenario(seed=1, index=0, kind="dra", nodes=[{"metadata": {"name": n}} for n in ("n0", "n1")],
                        pods=[pod("p0", shared, own), pod("p1", shared, template)],
                        objects=[obj("ResourceSlice", "s0", nodeName="n0"), obj("ResourceSlice", "s1", nodeName="n1"),
                                 obj("ResourceClaim", "shared"), obj("ResourceClaim", "own"),
                                 obj("ResourceClaimTemplate", "t")])  # fmt: skip

    def names(found):
        return [o["metadata"]["name"] for o in found.objects]

    assert names(scenario.without_node(0)) == ["s1", "shared", "own", "t"]
    assert names(scenario.without_pod(0)) == ["s0", "s1", "shared", "t"]
    assert names(scenario.without_pod(0).without_pod(0)) == ["s0", "s1"]


def test_a_preemption_agrees_only_when_message_node_victims_and_binding_all_do():
    real = {"pod": "u", "node": "n1", "message": "m", "nominated": "n1", "victims": ["ns/a", "ns/b"]}
    predicted = {"predicted": "m", "predicted_nomination": "n1", "predicted_victims": ["ns/b", "ns/a"]}
    assert PodVerdict(**real, **predicted).agrees
    assert not PodVerdict(**{**real, "victims": ["ns/a"]}, **predicted).agrees
    assert not PodVerdict(**{**real, "node": "n2"}, **predicted).agrees
    assert not PodVerdict(**real, **{**predicted, "predicted_nomination": "n2"}).agrees
    assert not PodVerdict(**{**real, "nominated": None}, **predicted).agrees  # gpusched preempts, the scheduler did not


def test_claims_must_match_and_an_allocator_error_may_name_any_node():
    allocation = {"devices": {"results": [RESULT]}}
    assert PodVerdict(
        pod="p", node="n0", feasible=["n0"], claims=[ClaimCheck(claim="ns/c", real=allocation, predicted=allocation)]
    ).agrees
    other = {"devices": {"results": [{**RESULT, "device": "gpu-1"}]}}
    assert not PodVerdict(
        pod="p", node="n0", feasible=["n0"], claims=[ClaimCheck(claim="ns/c", real=allocation, predicted=other)]
    ).agrees
    errors = {"message": "error on n1", "predicted": "error on n0", "alternatives": ["error on n0", "error on n1"]}
    assert PodVerdict(pod="p", **errors).agrees
    assert not PodVerdict(pod="p", **{**errors, "alternatives": ["error on n0"]}).agrees


def test_a_claim_disagreement_prints_both_allocations(capsys):
    scenario = scenarios("dra")[0]
    claim = ClaimCheck(claim="ns/c", real={"devices": {"results": [RESULT]}}, predicted=None)
    outcome = PodVerdict(pod=scenario.pods[0]["metadata"]["name"], node="n0", feasible=["n0"], claims=[claim])
    report = ConformanceReport(version="v1.37.2", seed=11, scenarios=1, pods=1, agreed=0, seconds=2.0,
                               disagreements=[Disagreement(scenario=scenario.label, outcome=outcome, reproducer=scenario)],
                               dra_scenarios=1, claims=1, allocated=1, claims_agreed=0)  # fmt: skip
    _render_report(Console(highlight=False, soft_wrap=True), report)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "conformance against kube-scheduler v1.37.2, seed 11: 1 scenarios, 1 pods, 0 agree (0%); "
        "1 scenarios with DRA objects, 1 claims (1 allocated), 0 as predicted in 2 s"
    )
    assert "  claim ns/c: real r0=n0/gpu-0; gpusched none" in lines
    assert "kind: ResourceSlice" in lines or "kind: DeviceClass" in lines


def test_a_generated_claim_is_named_in_messages_as_gpusched_names_it():
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "resourceClaims": [
                {"name": "c0", "resourceClaimTemplateName": "t"},
                {"name": "c1", "resourceClaimName": "mine"},
            ]
        },
        "status": {"resourceClaimStatuses": [{"name": "c0", "resourceClaimName": "p-c0-x7k2q"}]},
    }
    message = "claim ns/p-c0-x7k2q, request r0: cannot add device; claim ns/mine too"
    assert _stamped(message, pod) == "claim ns/p-c0, request r0: cannot add device; claim ns/mine too"
    assert _stamped(None, pod) is None


def test_an_allocator_error_is_compared_in_the_schedulers_words():
    error = InputError(
        "objects",
        'running "DynamicResources" filter plugin: claim ns/c: selector #0 on device d: '
        "CEL runtime error: no such overload (expression: x > 3)",
        "spec.devices",
    )
    assert _scheduler_words(error) == (
        'running "DynamicResources" filter plugin: claim ns/c: selector #0 on device d: '
        "CEL runtime error: no such overload"
    )


def test_the_report_line_counts_preemptions_and_pods_that_came_meanwhile(capsys):
    report = ConformanceReport(version="v1.37.2", seed=3, scenarios=4, pods=9, agreed=9, seconds=5.0, disagreements=[],
                               preemption_scenarios=2, preemptions=3, during=1, budget_scenarios=1,
                               plugins={"InterPodAffinity": PluginCount(scenarios=2, pods=3)},
                               rules={"podAffinity": 3})  # fmt: skip
    _render_report(Console(highlight=False, soft_wrap=True), report)
    assert capsys.readouterr().out.splitlines() == [
        "conformance against kube-scheduler v1.37.2, seed 3: 4 scenarios, 9 pods, 9 agree (100%); 2 with preemption, "
        "3 pods preempted others, 1 arrived meanwhile, 1 with disruption budgets; pods with podAffinity 3 in 5 s",
        "scenarios per plugin at work (rejected a node, claims, preemption): InterPodAffinity 2 (3 pods)",
    ]


def test_refusals_and_never_tried_pods_agree_only_with_the_same_prediction(capsys):
    assert PodVerdict(pod="p", refused=True, predicted_refused=True).agrees
    assert not PodVerdict(pod="p", refused=True).agrees
    assert not PodVerdict(pod="p", node="n0", feasible=["n0"], predicted_refused=True).agrees
    assert PodVerdict(pod="p", held="SchedulingGated", predicted_held="SchedulingGated").agrees
    assert not PodVerdict(pod="p", held="SchedulingGated", predicted_held="no PodScheduled condition").agrees
    assert not PodVerdict(pod="p", message="m", predicted="m", predicted_held="SchedulingGated").agrees
    report = ConformanceReport(version="v1.37.2", seed=3, scenarios=4, pods=9, agreed=9, seconds=5.0, disagreements=[],
                               refused=1, held=2, plugins={"API server refusal": PluginCount(scenarios=1, pods=1),
                                                           "NodePorts": PluginCount(scenarios=2, pods=2)})  # fmt: skip
    _render_report(Console(highlight=False, soft_wrap=True), report)
    assert capsys.readouterr().out.splitlines() == [
        "conformance against kube-scheduler v1.37.2, seed 3: 4 scenarios, 9 pods, 9 agree (100%); 1 refused by the "
        "API server, 2 never tried in 5 s",
        "scenarios per plugin at work (rejected a node, claims, preemption): API server refusal 1 (1 pods), "
        "NodePorts 2 (2 pods)",
    ]


def test_the_schedulers_words_leave_out_what_gpusched_adds():
    timed_out = InputError("objects", 'running "DynamicResources" filter plugin: node n: timed out trying to allocate '
                           "devices (not modelled: the search time; gpusched gave up after 3 devices tried)")  # fmt: skip
    assert _scheduler_words(timed_out) == (
        'running "DynamicResources" filter plugin: node n: timed out trying to allocate devices'
    )


def test_gpusched_refuses_exactly_the_dra_objects_drawn_for_the_api_server_to_refuse():
    """Request policies the API server refuses are drawn now and then, only where DRAConsumableCapacity is on (an
    older server drops the policy, and the capacity requests: nothing is left to refuse)."""
    newest = [obj for i in range(300) for obj in generate(7, i, "ns").objects]
    refused = [obj for obj in newest if REFUSED in obj["metadata"].get("annotations", {})]
    assert refused and all(obj["kind"] == "ResourceSlice" for obj in refused)
    for obj in refused:
        with pytest.raises(InputError, match="requestPolicy"):
            objects_from([("slice", [obj])], pods=False)
    for i in range(300):
        older = generate(7, i, "ns", (1, 35, 4)).objects
        assert not any(REFUSED in obj["metadata"].get("annotations", {}) for obj in older)
        read = objects_from([("scenario", older)], pods=False)
        assert not any(d.allow_multiple_allocations is not None for s in read.slices for d in s.spec.devices)
        assert not any(r.exactly and r.exactly.capacity for c in read.claims for r in c.spec.devices.requests)


def test_releases_before_1_37_get_the_same_scenarios_without_device_taint_rules():
    """resource.k8s.io/v1 serves DeviceTaintRules from 1.37 (DRADeviceTaintRules): before, a user cannot create one."""
    ruled = [i for i in range(120) if any(o["kind"] == "DeviceTaintRule" for o in generate(11, i, "ns").objects)]
    assert ruled
    for index in ruled:
        for version in ((1, 34), (1, 35)):
            older = generate(11, index, "ns", version)
            assert older.pods == generate(11, index, "ns").pods
            assert not any(o["kind"] == "DeviceTaintRule" for o in older.objects)


def test_a_refused_dra_object_is_judged_like_a_refused_pod_and_is_its_own_reproducer():
    scenario = next(s for s in scenarios("dra") if s.pods)
    outcome = PodVerdict(pod="ResourceClaim x", refused=True, predicted_refused=False)
    assert not outcome.agrees and PodVerdict(pod="ResourceClaim x", refused=True, predicted_refused=True).agrees
    assert shrink(None, scenario, outcome) == (scenario, outcome)  # type: ignore[arg-type]  # replays nothing


def test_a_timeout_gpusched_lists_as_possible_and_a_delayed_retry_agree():
    timed_out = "0/2 nodes are available: 1 timed out trying to allocate devices, 1 cannot allocate all claims."
    found = PodVerdict(pod="p", message=timed_out, predicted="0/2 nodes are available: 2 cannot allocate all claims.",
                       alternatives=[timed_out])  # fmt: skip
    assert found.agrees and not found.model_copy(update={"alternatives": []}).agrees
    assert found.model_copy(update={"feasible": ["n1"]}).agrees  # the real one timed out on the node gpusched found
    preempted = PodVerdict(pod="p", message="m", predicted="m", nominated="n", predicted_nomination="n")
    assert not preempted.agrees and preempted.model_copy(update={"node": "n"}).agrees
    waits = preempted.model_copy(update={"predicted_retried": False})
    assert waits.agrees and not waits.model_copy(update={"node": "n"}).agrees
