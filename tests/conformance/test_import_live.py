"""Round trip through a real API server: the kubectl dump in tests/data/import, created as API objects (Nodes with
their status, bound Pods with theirs, the NVIDIA driver's ResourceSlice and allocated ResourceClaims), imported back
with `gpusched import --kubeconfig` (and as a kubeconfig CLUSTER argument) gives the model the files give.

A control plane of its own (no controller manager, so nothing rewrites the claims; the scheduler leaves the Pending
pods alone because they name another scheduler), so the other conformance tests never see these nodes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusched.conformance.api import Rest
from gpusched.conformance.build import ensure_built
from gpusched.conformance.cluster import start
from gpusched.scenarios import load_cluster, load_pods
from gpusched.scenarios.importer import build_cluster, read_dump_dir

DATA = Path(__file__).parent.parent / "data" / "import"
TOPOLOGY = [f"{p.stem}={p}" for p in sorted((DATA / "topology").iterdir())]
RESOURCE = "/apis/resource.k8s.io/v1"
CLASSES = {"training-high": 1000, "inference": 100}


def _items(name: str) -> list[dict]:
    return json.loads((DATA / name).read_text())["items"]


def _manifest(item: dict) -> dict:
    """What a user would apply: the object without what the API server sets itself."""
    meta = {k: v for k, v in item["metadata"].items() if k in ("name", "namespace", "labels", "generateName")}
    body = {"apiVersion": item["apiVersion"], "kind": item["kind"], "metadata": meta, "spec": dict(item["spec"])}
    body["spec"].pop("priority", None)  # the Priority admission plugin sets it from priorityClassName
    return body


def _status_patch(status: dict) -> list[dict]:
    return [{"op": "add", "path": f"/status/{key}", "value": value} for key, value in status.items()]


def _create(rest: Rest) -> None:
    for namespace in sorted({p["metadata"]["namespace"] for p in _items("pods.json")} - {"kube-system", "default"}):
        rest.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    for name, value in CLASSES.items():
        rest.create("/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": name}, "value": value})
    for node in _items("nodes.json"):
        rest.create("/api/v1/nodes", {**_manifest(node), "status": node["status"]})
    for item in _items("resourceslices.json"):
        if item["kind"] == "ResourceSlice":
            rest.create(f"{RESOURCE}/resourceslices", _manifest(item))
        else:
            path = f"{RESOURCE}/namespaces/{item['metadata']['namespace']}/resourceclaims"
            rest.create(path, _manifest(item))
            rest.patch_status(f"{path}/{item['metadata']['name']}", _status_patch(item["status"]))
    for pod in _items("pods.json"):
        manifest = _manifest(pod)
        if "nodeName" not in manifest["spec"]:
            manifest["spec"]["schedulerName"] = "left-pending"  # a scheduler that does not exist: stays Pending
        path = f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods"
        rest.create(path, manifest)
        if "nodeName" in manifest["spec"]:
            status = {k: v for k, v in pod["status"].items() if k in ("phase", "startTime", "hostIP")}
            rest.patch_status(f"{path}/{pod['metadata']['name']}", _status_patch(status))


@pytest.fixture(scope="module")
def kubeconfig():
    cluster = start(ensure_built())
    try:
        rest = Rest(cluster.kubeconfig)
        try:
            _create(rest)
        finally:
            rest.close()
        yield cluster.kubeconfig
    finally:
        cluster.stop()


def _by_name(cluster):
    return sorted(cluster.nodes, key=lambda node: node.name), cluster.running, cluster.nvlink_domains


def test_import_from_the_api_server_gives_the_model_the_files_give(kubeconfig, gpusched, tmp_path):
    out = tmp_path / "cluster.yaml"
    args = [a for t in TOPOLOGY for a in ("--topology", t)]
    result = gpusched("import", "--kubeconfig", kubeconfig, "--output-file", out, *args)
    assert result.exit_code == 0, result.stderr
    assert result.lines[0].startswith(
        "imported 12 nodes (11 with GPUs, 41 GPUs), 13 pods holding GPUs, 1 NVLink domain(s)"
    )
    from_files = build_cluster(read_dump_dir(str(DATA)))
    assert _by_name(load_cluster(str(out))) == _by_name(from_files.cluster)


def test_a_kubeconfig_is_a_cluster_argument_and_its_pending_pods_the_workload(kubeconfig):
    from_files = build_cluster(read_dump_dir(str(DATA)))
    live = load_cluster(f"{kubeconfig}#gpusched")
    assert sorted(n.name for n in live.nodes) == sorted(n.name for n in from_files.cluster.nodes)
    assert sorted(p.name for p in load_pods(str(kubeconfig)).pods) == sorted(p.name for p in from_files.pending.pods)


def test_an_unknown_context_is_one_clear_error(kubeconfig, gpusched):
    result = gpusched("frag", f"{kubeconfig}#nowhere")
    assert result.exit_code == 2 and "context 'nowhere' not found" in result.stderr


def test_explain_reads_a_live_cluster_as_the_dump_gives_it(kubeconfig, gpusched, tmp_path):
    for name in ("nodes.json", "pods.json", "resourceslices.json"):  # the API holds no nvidia-smi topology
        (tmp_path / name).write_text((DATA / name).read_text())
    live = gpusched("explain", "ml/llm-pretrain-1", "--kubeconfig", kubeconfig, "--json")
    dumped = gpusched("explain", "ml/llm-pretrain-1", "--cluster", tmp_path, "--json")
    assert live.exit_code == dumped.exit_code == 1
    live_report, dumped_report = live.json(), dumped.json()
    by_reason = [
        {r["reason"]: sorted(r["nodes"]) for r in report.pop("reasons")} for report in (live_report, dumped_report)
    ]
    assert by_reason[0] == by_reason[1]  # the API lists nodes by name, the dump in its own order
    assert live_report == dumped_report
    assert gpusched("explain", "serve/asr-1", "--kubeconfig", kubeconfig, "--context", "gpusched").exit_code == 0
