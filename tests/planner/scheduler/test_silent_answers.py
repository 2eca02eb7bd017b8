"""Answers that were silently wrong: another scheduler's pod, duplicate container names, quantities past int64
millis, missing volume claims (VolumeRestrictions/VolumeBinding's PreFilter), selectors gpusched cannot run."""

from __future__ import annotations

import pytest
from test_k8s import GPU, container, listed, node, pod

from gpusched.errors import InputError
from gpusched.planner.scheduler.predict import predict

PVCS = "kubectl-pvcs"


def test_another_schedulers_pod_is_never_tried(gpusched, write):
    target = pod("p", 1, schedulerName="my-scheduler")
    result = predict(listed(node()), None, target)
    assert result.never_tried == "not this scheduler's pod: never tried by default-scheduler"
    assert not result.fits and result.message is None and result.event is None and result.nodes == []
    run = gpusched("k8s", "--nodes", write("nodes.json", listed(node())), write("pod.json", target))
    assert run.exit_code == 1
    assert run.lines == ["not this scheduler's pod: never tried by default-scheduler"]


def test_the_default_scheduler_name_is_ours():
    assert predict(listed(node()), None, pod("p", 1, schedulerName="default-scheduler")).fits
    assert predict(listed(node()), None, pod("p", 1, schedulerName="")).fits  # the API server's default


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({"containers": [container(name="a"), container(name="a")]}, "spec.containers[1].name"),
        ({"containers": [container(name="a")], "initContainers": [container(name="a")]}, "spec.initContainers[0].name"),
    ],
)
def test_duplicate_container_names_are_refused_as_the_api_server_refuses_them(spec, path):
    target = pod("p", **spec)
    with pytest.raises(InputError) as caught:
        predict(listed(node()), None, target)
    assert path in str(caught.value) and 'Duplicate value: "a"' in str(caught.value)


def test_an_extended_resource_of_int64_max_is_used():
    huge = "9223372036854775807"
    result = predict(listed(node(gpus=huge)), None, pod("p", 5))
    assert result.fits
    with pytest.raises(InputError, match="int64"):
        predict(listed(node(gpus="9223372036854775808")), None, pod("p", 5))
    with pytest.raises(InputError, match="millicores"):
        predict(listed(node(cpu=huge)), None, pod("p", 5))


def _claims(*names, namespace="default"):
    return listed(*({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": n, "namespace": namespace}} for n in names))  # fmt: skip


def test_a_missing_volume_claim_is_the_prefilter_message():
    target = pod("p", 1, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "missing"}}])
    result = predict(listed(node(), node("b")), None, target, pvcs_doc=_claims("other"))
    # DynamicResources' PostFilter finds no state of its own (its PreFilter never ran) and stops there, as after
    # NodeAffinity's PreFilter
    assert result.message == '0/2 nodes are available: persistentvolumeclaim "missing" not found. not found'
    assert {verdict.plugin for verdict in result.nodes} == {"VolumeRestrictions"}
    assert result.not_modelled == []
    present = predict(listed(node()), None, target, pvcs_doc=_claims("missing"))
    assert present.fits and present.not_modelled  # binding itself is not modelled
    unknown = predict(listed(node()), None, target)
    assert unknown.fits and unknown.not_modelled  # no claims given: flagged, not judged


def test_an_ephemeral_volumes_claim_is_named_after_the_pod():
    target = pod("p", 1, volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
    result = predict(listed(node()), None, target, pvcs_doc=_claims())
    assert result.message.startswith('0/1 nodes are available: persistentvolumeclaim "p-scratch" not found.')
    assert {verdict.plugin for verdict in result.nodes} == {"VolumeBinding"}


def test_a_gpu_request_is_still_counted_with_a_huge_node():
    result = predict(
        listed(node(gpus="9223372036854775807")), listed(pod("q", 3, on="cc-lab-control-plane")), pod("p", 2)
    )
    assert result.requests[GPU] == 2 and result.fits


def test_a_selector_gpusched_cannot_run_is_flagged():
    from gpusched.planner.dra.objects import objects_from

    selector = {"cel": {"expression": "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}"}}
    spec = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": [selector]}}]}}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default"}, "spec": spec}  # fmt: skip
    gpu_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {}}
    found = objects_from([("objects.json", [gpu_class, claim])], pods=False)
    result = predict(listed(node()), None, pod("p", resourceClaims=[{"name": "g", "resourceClaimName": "c"}]),
                     objects=found)  # fmt: skip
    assert result.may_differ
    assert any("transformMap()" in note and "claim default/c, request r" in note for note in result.not_modelled)
