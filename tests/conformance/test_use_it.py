"""The seed's "Use It" extended-resource walk-through, on the real kube-apiserver and kube-scheduler.

A Node named like kind's, `example.com/gpu: 4` patched onto its status, gpu-a (2), gpu-b (1) and gpu-c (2) created
as `kubectl run --overrides` creates them; gpu-c's real PodScheduled message must be `gpusched k8s`'s prediction
from the same JSON, read from files and straight from the API server.
"""

from __future__ import annotations

import json

import pytest

from gpusched.conformance.api import Rest, RestError
from gpusched.conformance.differential import verdict

NODE = "cc-lab-control-plane"
NAMESPACE = "gpu"
GPU = "example.com/gpu"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"


def run_pod(name: str, gpus: str, requests: str | None = None) -> dict:
    """What `kubectl run NAME --image=pause --overrides=...` sends: a `run` label and one container."""
    resources = {"limits": {GPU: gpus}, **({"requests": {GPU: requests}} if requests else {})}
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"run": name}},
        "spec": {"containers": [container]},
    }


def await_verdict(rest: Rest, name: str) -> tuple[str | None, str | None]:
    return rest.wait(lambda: verdict(rest.get(f"{PODS}/{name}")))


@pytest.fixture(scope="module")
def walkthrough(control_plane):
    """The node as a kubelet would register it, the status patch, then the three pods in order."""
    rest = Rest(control_plane.kubeconfig)
    status = {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    status["allocatable"] = dict(status["capacity"])
    rest.create(
        "/api/v1/nodes", {"metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}}, "status": status}
    )
    rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    # The device plugin's registration, then the kubelet's next status update copying it into allocatable.
    for field in ("capacity", "allocatable"):
        rest.patch_status(
            f"/api/v1/nodes/{NODE}", [{"op": "add", "path": f"/status/{field}/example.com~1gpu", "value": "4"}]
        )
    verdicts = {}
    for name, gpus in (("gpu-a", "2"), ("gpu-b", "1"), ("gpu-c", "2")):
        rest.create(PODS, run_pod(name, gpus))
        verdicts[name] = await_verdict(rest, name)
    try:
        yield rest, verdicts
    finally:
        rest.delete(PODS)
        rest.delete(f"/api/v1/nodes/{NODE}")
        rest.wait(lambda: not rest.get(PODS)["items"])
        rest.close()


def test_the_patch_reaches_the_node_status(walkthrough):
    rest, _ = walkthrough
    assert rest.get(f"/api/v1/nodes/{NODE}")["status"]["allocatable"][GPU] == "4"


def test_gpu_a_and_gpu_b_bind_and_gpu_c_waits(walkthrough):
    _, verdicts = walkthrough
    assert verdicts["gpu-a"] == (NODE, None) and verdicts["gpu-b"] == (NODE, None)
    assert verdicts["gpu-c"][0] is None
    assert verdicts["gpu-c"][1].startswith("0/1 nodes are available: 1 Insufficient example.com/gpu.")


def test_gpusched_predicts_gpu_c_from_the_kubectl_json(walkthrough, control_plane, gpusched, write):
    rest, verdicts = walkthrough
    nodes = write("nodes.json", rest.get("/api/v1/nodes"))
    pods = write("pods.json", rest.get("/api/v1/pods"))
    target = write("gpu-c.json", rest.get(f"{PODS}/gpu-c"))
    version = control_plane.info.version
    result = gpusched("k8s", "--nodes", nodes, "--pods", pods, target, "--k8s-version", version)
    assert result.exit_code == 1
    assert result.lines[0] == f"{NODE} Insufficient {GPU} ({GPU}: requested 2, free 1 of 4)"
    assert result.lines[1] == f"FailedScheduling: {verdicts['gpu-c'][1]}"


def test_gpusched_reads_the_same_from_the_api_server(walkthrough, control_plane, gpusched):
    _, verdicts = walkthrough
    live = ("--kubeconfig", control_plane.kubeconfig, "--k8s-version", control_plane.info.version)
    result = gpusched("k8s", *live, f"{NAMESPACE}/gpu-c", "--json")
    assert result.exit_code == 1
    assert result.json()["message"] == verdicts["gpu-c"][1]


def test_without_a_version_the_prediction_follows_the_server(walkthrough, control_plane, gpusched):
    _, verdicts = walkthrough
    result = gpusched("k8s", "--kubeconfig", control_plane.kubeconfig, f"{NAMESPACE}/gpu-c", "--json")
    assert result.exit_code == 1
    report = result.json()
    assert report["version"] == control_plane.info.version.lstrip("v")
    assert report["message"] == verdicts["gpu-c"][1]


def test_deleting_gpu_a_schedules_gpu_c(walkthrough):
    rest, _ = walkthrough
    rest.delete(f"{PODS}/gpu-a")
    assert rest.wait(lambda: rest.get(f"{PODS}/gpu-c")["spec"].get("nodeName")) == NODE


@pytest.mark.parametrize(
    ("limit", "requested", "refusal"),
    [
        ("500m", None, "must be an integer"),
        ("2", "1", f"must be equal to {GPU} limit of 2"),
    ],
)
def test_the_api_server_refuses_fractions_and_overcommit(walkthrough, limit, requested, refusal):
    rest, _ = walkthrough
    with pytest.raises(RestError) as refused:
        rest.create(PODS, run_pod("bad", limit, requested))
    assert refused.value.status == 422 and refusal in refused.value.message


def test_bad_kubeconfig_context_and_server_exit_2(control_plane, gpusched, write):
    config = json.loads(control_plane.kubeconfig.read_text())
    unreachable = json.loads(json.dumps(config))
    unreachable["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    cases = {
        "context 'nope' not found (contexts: gpusched, viewer)": (
            "--kubeconfig",
            control_plane.kubeconfig,
            "--context",
            "nope",
        ),
        "not a kubeconfig": ("--kubeconfig", write("broken.yaml", "contexts: [")),
        "cannot reach the API server": ("--kubeconfig", write("gone.json", unreachable)),
        "GET /api/v1/nodes: 403": ("--kubeconfig", control_plane.kubeconfig, "--context", "viewer"),
    }
    for needle, args in cases.items():
        result = gpusched("k8s", *args, f"{NAMESPACE}/gpu-c")
        assert result.exit_code == 2, (needle, result.stdout, result.stderr)
        assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
