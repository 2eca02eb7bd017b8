"""`gpusched slices --apply` against the real API server: the dry run stores nothing, --yes creates the DeviceClasses
and ResourceSlices, a second --yes changes nothing (same resourceVersions), a changed model is an update, the
scheduler allocates a claim from the published slices exactly as `gpusched dra` predicts, and a user without rights
gets one message and exit 2.
"""

from __future__ import annotations

import json

import pytest

from gpusched.conformance.api import Rest
from gpusched.conformance.differential import verdict

NODE = "apply-a"
NAMESPACE = "gpusched-apply"
RESOURCE = "/apis/resource.k8s.io/v1"
CLASSES = ("gpu.example.com", "mig.example.com")
SLICE = f"{NODE}-gpu.example.com"
MODEL = {"nodes": [{"name": NODE, "gpu": {"model": "A100-PCIE-80GB", "count": 4, "memory_gib": 80,
                                          "islands": [[0, 2], [1, 3]]}}]}  # fmt: skip


def ours(rest: Rest) -> dict[str, str]:
    """kind/name -> resourceVersion of the objects gpusched publishes here, as the server has them."""
    found = {}
    for kind, collection, names in (
        ("DeviceClass", "deviceclasses", CLASSES),
        ("ResourceSlice", "resourceslices", (SLICE,)),
    ):
        for item in rest.get(f"{RESOURCE}/{collection}")["items"]:
            if item["metadata"]["name"] in names:
                found[f"{kind}/{item['metadata']['name']}"] = item["metadata"]["resourceVersion"]
    return found


@pytest.fixture(scope="module")
def rest(control_plane):
    """The node the slices name and a namespace for the claim; everything removed afterwards."""
    client = Rest(control_plane.kubeconfig)
    status = {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    client.create("/api/v1/nodes", {"metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
                                    "status": {**status, "allocatable": dict(status["capacity"])}})  # fmt: skip
    client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    try:
        yield client
    finally:
        client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods")
        client.delete(f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims")
        for key in ours(client):
            kind, name = key.split("/")
            client.delete(f"{RESOURCE}/{'deviceclasses' if kind == 'DeviceClass' else 'resourceslices'}/{name}")
        client.delete(f"/api/v1/nodes/{NODE}")
        client.delete(f"/api/v1/namespaces/{NAMESPACE}")
        client.close()


@pytest.fixture
def apply(gpusched, write, control_plane):
    def run(*args: str, model: dict = MODEL):
        return gpusched("slices", write("model.json", model), "--classes", "--apply",
                        "--kubeconfig", control_plane.kubeconfig, *args)  # fmt: skip

    return run


def test_dry_run_stores_nothing_yes_creates_and_again_changes_nothing(rest, apply):
    dry = apply()
    assert dry.exit_code == 0, dry.stderr
    assert dry.lines[1:] == ["create DeviceClass gpu.example.com", "create DeviceClass mig.example.com",
                             f"create ResourceSlice {SLICE}", "3 to create, 0 to update, 0 unchanged"]  # fmt: skip
    assert ours(rest) == {}
    created = apply("--yes")
    assert created.exit_code == 0 and created.lines[-1] == "3 created, 0 updated, 0 unchanged"
    versions = ours(rest)
    assert set(versions) == {"DeviceClass/gpu.example.com", "DeviceClass/mig.example.com", f"ResourceSlice/{SLICE}"}
    managers = {m["manager"] for m in rest.get(f"{RESOURCE}/resourceslices/{SLICE}")["metadata"]["managedFields"]}
    assert managers == {"gpusched"}
    again = apply("--yes", "--json").json()
    assert [c["action"] for c in again["changes"]] == ["unchanged"] * 3 and not again["dry_run"]
    assert ours(rest) == versions  # a no-op apply writes nothing


def test_a_changed_model_is_an_update_that_the_dry_run_only_describes(rest, apply):
    smaller = {"nodes": [{**MODEL["nodes"][0], "gpu": {**MODEL["nodes"][0]["gpu"], "memory_gib": 40}}]}
    before = rest.get(f"{RESOURCE}/resourceslices/{SLICE}")
    dry = apply(model=smaller)
    assert f"update ResourceSlice {SLICE}: spec.devices" in dry.lines
    assert rest.get(f"{RESOURCE}/resourceslices/{SLICE}") == before
    assert apply("--yes", model=smaller).exit_code == 0
    memory = rest.get(f"{RESOURCE}/resourceslices/{SLICE}")["spec"]["devices"][0]["capacity"]["memory"]["value"]
    assert memory == "40Gi"
    restored = apply("--yes")
    assert f"updated ResourceSlice {SLICE}: spec.devices" in restored.lines


def test_the_scheduler_allocates_from_the_applied_slices_as_gpusched_predicts(
    rest, apply, gpusched, write, control_plane
):
    assert apply("--yes").exit_code == 0
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "pair", "namespace": NAMESPACE},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2},
                    }
                ],
                "constraints": [{"requests": ["gpus"], "matchAttribute": "gpu.example.com/nvlinkIsland"}],
            }
        },
    }
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"claims": [{"name": "gpus"}]}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "dra", "namespace": NAMESPACE},
        "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimName": "pair"}], "containers": [container]},
    }
    classes = [item for item in gpusched("slices", write("m.json", MODEL), "--classes").json()["items"]
               if item["kind"] == "DeviceClass"]  # fmt: skip
    objects = write("objects.json", {"apiVersion": "v1", "kind": "List", "items": [*classes, claim, pod]})
    version = ("--k8s-version", control_plane.info.version)
    predicted = gpusched("dra", "--cluster", write("m.json", MODEL), "--objects", objects, *version, "--json").json()
    (expected,) = predicted["claims"]
    assert expected["allocated"] and expected["devices"] == [f"{NODE}/gpu-0", f"{NODE}/gpu-2"]
    rest.create(f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims", claim)
    live = gpusched("dra", "--kubeconfig", control_plane.kubeconfig, *version, "--json")
    (before,) = [c for c in live.json()["claims"] if c["claim"] == f"{NAMESPACE}/pair"]
    assert before["devices"] == expected["devices"]  # read from the server: the same prediction as from the files
    rest.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod)
    node, message = rest.wait(lambda: verdict(rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods/dra")), timeout=60)
    assert (node, message) == (NODE, None)
    allocation = rest.get(f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims/pair")["status"]["allocation"]
    assert allocation["devices"]["results"] == expected["allocation"]["devices"]["results"]
    after = gpusched("dra", "--kubeconfig", control_plane.kubeconfig, "--context", "gpusched", *version, "--json")
    after = after.json()
    (held,) = [c for c in after["claims"] if c["claim"] == f"{NAMESPACE}/pair"]
    assert held["allocated"] and held["devices"] == expected["devices"]  # the real allocation, read back


def test_a_user_without_rights_gets_one_message_and_nothing_is_written(rest, apply, gpusched, write, control_plane):
    other = {"nodes": [{**MODEL["nodes"][0], "name": "apply-b"}]}
    result = gpusched("slices", write("other.json", other), "--apply", "--yes",
                      "--kubeconfig", control_plane.kubeconfig, "--context", "viewer")  # fmt: skip
    assert result.exit_code == 2 and result.stdout == ""
    assert "forbidden" in result.stderr and 'User "viewer"' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    names = [item["metadata"]["name"] for item in rest.get(f"{RESOURCE}/resourceslices")["items"]]
    assert "apply-b-gpu.example.com" not in names
    assert (
        json.loads(gpusched("slices", write("o.json", other)).stdout)["items"][0]["metadata"]["name"]
        == "apply-b-gpu.example.com"
    )  # the name that would have been written
