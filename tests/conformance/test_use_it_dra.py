"""The seed's DRA walk-through on the real scheduler: the claim `pair` (two GPUs of at least 40Gi in one NVLink
island), Pending before any driver publishes devices, then `gpusched slices` published as the driver would, and
the real allocation equal to gpusched's. Then a firstAvailable claim and a ResourceClaimTemplate (its claim made
by kube-controller-manager), each allocated exactly as gpusched predicts.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpusched.conformance.api import Rest
from gpusched.conformance.differential import verdict

ROOT = Path(__file__).resolve().parents[2]
NODE = "cc-lab-control-plane"
NAMESPACE = "gpu-dra"
RESOURCE = "/apis/resource.k8s.io/v1"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
CLAIMS = f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims"
MEMORY = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
ISLAND = {"requests": ["gpus"], "matchAttribute": "gpu.example.com/nvlinkIsland"}


def exactly(count: int) -> dict:
    return {"deviceClassName": "example-gpu", "allocationMode": "ExactCount", "count": count,
            "selectors": [{"cel": {"expression": MEMORY}}]}  # fmt: skip


def claim_spec(request: dict) -> dict:
    return {"devices": {"requests": [{"name": "gpus", **request}], "constraints": [ISLAND]}}


def dra_pod(name: str, source: dict) -> dict:
    """A pod with one claim `gpus`, given by name (resourceClaimName) or template (resourceClaimTemplateName)."""
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"claims": [{"name": "gpus"}]}}
    spec = {"resourceClaims": [{"name": "gpus", **source}], "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def kubectl_list(rest: Rest, path: str, kind: str) -> dict:
    """`kubectl get -o json` of a collection: a List whose items carry their kind and apiVersion."""
    items = rest.get(path)["items"]
    version = "v1" if path.startswith("/api/") else "resource.k8s.io/v1"
    return {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": version, "kind": kind, **i} for i in items]}


def predict(rest: Rest, gpusched, write, version: str, pod: dict, extra: list[dict] = ()) -> dict:
    """`gpusched k8s --json` for the release running, on what kubectl would print now, plus objects not applied yet
    (the driver's slices)."""
    files = {
        "nodes.json": kubectl_list(rest, "/api/v1/nodes", "Node"),
        "pod.json": pod,
        "classes.json": kubectl_list(rest, f"{RESOURCE}/deviceclasses", "DeviceClass"),
        "slices.json": kubectl_list(rest, f"{RESOURCE}/resourceslices", "ResourceSlice"),
        "claims.json": kubectl_list(rest, CLAIMS, "ResourceClaim"),
        "templates.json": kubectl_list(
            rest, f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaimtemplates", "ResourceClaimTemplate"
        ),  # fmt: skip
        **{f"extra-{i}.json": doc for i, doc in enumerate(extra)},
    }
    paths = {name: write(name, doc) for name, doc in files.items()}
    objects = [
        arg for name, path in paths.items() if name not in ("nodes.json", "pod.json") for arg in ("--objects", path)
    ]
    files_args = ("--nodes", paths["nodes.json"], paths["pod.json"], *objects)
    result = gpusched("k8s", *files_args, "--k8s-version", version, "--json")
    assert result.exit_code in (0, 1), result.stderr
    return result.json()


def results(allocation: dict) -> list[tuple[str, str, str, str]]:
    return [(r["request"], r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]]


def await_verdict(rest: Rest, name: str, bound: bool) -> tuple[str | None, str | None]:
    """The first verdict that is bound (or not): a DRA pod may first wait for its generated claim."""

    def check():
        found = verdict(rest.get(f"{PODS}/{name}"))
        return found if found and (found[0] is not None) == bound else None

    return rest.wait(check, timeout=60)


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory):
    """One node with no GPUs in its status (DRA needs none), the class, the namespace; all removed afterwards."""
    rest = Rest(control_plane.kubeconfig)
    status = {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    rest.create("/api/v1/nodes", {"metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
                                  "status": {**status, "allocatable": dict(status["capacity"])}})  # fmt: skip
    rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    rest.create(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "example-gpu"},
                "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})  # fmt: skip
    try:
        yield rest
    finally:
        rest.delete(PODS)
        rest.delete(CLAIMS)
        rest.delete(f"{RESOURCE}/resourceslices")
        rest.delete(f"{RESOURCE}/deviceclasses/example-gpu")
        rest.delete(f"/api/v1/nodes/{NODE}")
        rest.wait(lambda: not rest.get(PODS)["items"])
        rest.close()


def test_pair_pending_then_allocated_as_gpusched_predicts(cluster, control_plane, gpusched, write):
    rest = cluster
    rest.create(CLAIMS, {"metadata": {"name": "pair"}, "spec": claim_spec({"exactly": exactly(2)})})
    rest.create(PODS, dra_pod("dra", {"resourceClaimName": "pair"}))
    _, message = await_verdict(rest, "dra", bound=False)
    assert "cannot allocate all claims" in message
    version = control_plane.info.version
    pending = predict(rest, gpusched, write, version, rest.get(f"{PODS}/dra"))
    assert pending["message"] == message
    live = gpusched("k8s", "--kubeconfig", control_plane.kubeconfig, "--k8s-version", version,
                    f"{NAMESPACE}/dra", "--json")  # fmt: skip
    assert live.exit_code == 1 and live.json()["message"] == message  # the DRA objects read from the server
    slices = gpusched("slices", ROOT / "examples" / "kind" / "kind-model.json")
    assert slices.exit_code == 0, slices.stderr
    expected = predict(rest, gpusched, write, version, rest.get(f"{PODS}/dra"), [slices.json()])
    for item in slices.json()["items"]:
        rest.create(f"{RESOURCE}/resourceslices", item)
    assert await_verdict(rest, "dra", bound=True) == (NODE, None)
    allocation = rest.get(f"{CLAIMS}/pair")["status"]["allocation"]
    assert results(allocation) == results(expected["claims"][0]["allocation"])
    assert [device for *_, device in results(allocation)] == ["gpu-0", "gpu-2"]


def test_first_available_takes_the_first_subrequest_that_fits(cluster, control_plane, gpusched, write):
    rest = cluster
    subrequests = [{"name": name, **exactly(count)} for name, count in (("four", 4), ("pair", 2), ("one", 1))]
    rest.create(CLAIMS, {"metadata": {"name": "flex"}, "spec": claim_spec({"firstAvailable": subrequests})})
    pod = dra_pod("flex", {"resourceClaimName": "flex"})
    expected = predict(rest, gpusched, write, control_plane.info.version, pod)
    rest.create(PODS, pod)
    assert await_verdict(rest, "flex", bound=True) == (NODE, None)
    allocation = rest.get(f"{CLAIMS}/flex")["status"]["allocation"]
    assert results(allocation) == results(expected["claims"][0]["allocation"])
    assert [(request, device) for request, *_, device in results(allocation)] == [
        ("gpus/pair", "gpu-1"),
        ("gpus/pair", "gpu-3"),
    ]


def test_a_template_claim_is_generated_and_allocated_as_predicted(cluster, control_plane, gpusched, write):
    rest = cluster
    rest.delete(f"{PODS}/flex")
    rest.delete(f"{CLAIMS}/flex")  # gpu-1 and gpu-3 are free again
    rest.wait(lambda: not any(c["metadata"]["name"] == "flex" for c in rest.get(CLAIMS)["items"]))
    template = {"metadata": {"name": "pair-template"}, "spec": {"spec": claim_spec({"exactly": exactly(2)})}}
    rest.create(f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaimtemplates", template)
    pod = dra_pod("templated", {"resourceClaimTemplateName": "pair-template"})
    expected = predict(rest, gpusched, write, control_plane.info.version, copy.deepcopy(pod))
    rest.create(PODS, pod)
    assert await_verdict(rest, "templated", bound=True) == (NODE, None)
    statuses = rest.get(f"{PODS}/templated")["status"]["resourceClaimStatuses"]
    generated = rest.get(f"{CLAIMS}/{statuses[0]['resourceClaimName']}")
    assert results(generated["status"]["allocation"]) == results(expected["claims"][0]["allocation"])
    assert [device for *_, device in results(generated["status"]["allocation"])] == ["gpu-1", "gpu-3"]
