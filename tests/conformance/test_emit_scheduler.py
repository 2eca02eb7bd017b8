"""`place --emit-scheduler-config` on the real kube-scheduler: the binary loads and validates the emitted
KubeSchedulerConfiguration (`--config FILE --write-config-to OUT` decodes strictly, defaults, builds every profile and
exits), and a second scheduler running it binds pods exactly where `place --view extended --gpu-weight 10` puts them.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import yaml

from gpusched.conformance.api import Rest
from gpusched.conformance.build import ensure_built
from gpusched.conformance.differential import verdict
from gpusched.models.cluster import Cluster
from gpusched.planner.state import ClusterState, advertised

IMPORTED = str(Path(__file__).resolve().parents[1] / "data" / "import")
NAMESPACE = "gpusched-emit"
SELECTOR = {"gpusched.io/test": "emit-scheduler"}
NEEDS = {"cpu": 4, "memory": "16Gi", "node_selector": SELECTOR}
# Distinct node sizes, so no placement is decided by a tie (kube-scheduler breaks ties at random); two MIG nodes, so
# the nvidia.com/mig-3g.40gb weight decides where s0 goes (cpu and memory alone would pick m1).
SCENARIO = {
    "cluster": {"nodes": [
        {"name": "a", "labels": SELECTOR, "cpu": 64, "memory": "512Gi",
         "gpu": {"model": "A100-SXM4-80GB", "count": 6, "memory_gib": 80}},
        {"name": "b", "labels": SELECTOR, "cpu": 96, "memory": "768Gi",
         "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80}},
        {"name": "c", "labels": SELECTOR, "cpu": 32, "memory": "256Gi",
         "gpu": {"model": "A100-PCIE-80GB", "count": 4, "memory_gib": 80}},
        {"name": "m1", "labels": SELECTOR, "cpu": 48, "memory": "384Gi",
         "gpu": {"model": "A100-SXM4-80GB", "count": 1, "memory_gib": 80,
                 "mig": [{"gpu": 0, "profile": "3g.40gb", "start": 0}, {"gpu": 0, "profile": "3g.40gb", "start": 4}]}},
        {"name": "m2", "labels": SELECTOR, "cpu": 80, "memory": "640Gi",
         "gpu": {"model": "A100-SXM4-80GB", "count": 1, "memory_gib": 80,
                 "mig": [{"gpu": 0, "profile": "3g.40gb", "start": 0}, {"gpu": 0, "profile": "2g.20gb", "start": 4}]}},
    ]},
    "pods": [
        {"name": "p0", "gpus": 1, **NEEDS}, {"name": "p1", "gpus": 1, **NEEDS}, {"name": "p2", "gpus": 2, **NEEDS},
        {"name": "p3", "gpus": 1, **NEEDS}, {"name": "t0", "gpus": 4, **NEEDS, "cpu": 16}, {"name": "p4", "gpus": 1, **NEEDS},
        {"name": "s0", "gpus": 1, "mig_profile": "3g.40gb", **NEEDS}, {"name": "s1", "gpus": 1, "mig_profile": "3g.40gb", **NEEDS},
    ],
}  # fmt: skip


def kube_scheduler(version: str | None = None) -> Path:
    """The release's kube-scheduler (default the newest): a second scheduler runs the control plane's own release."""
    return ensure_built(version=version).path("kube-scheduler")


def load_and_write_back(config: Path, out: Path) -> subprocess.CompletedProcess:
    """kube-scheduler's own loading of a config file; it needs a server address but never contacts it."""
    args = [kube_scheduler(), f"--config={config}", "--master=https://127.0.0.1:1", "--secure-port=0",
            f"--write-config-to={out}"]  # fmt: skip
    return subprocess.run(args, check=False, capture_output=True, text=True, timeout=60)


def plugin_args(config: dict, plugin: str) -> dict:
    (found,) = [c["args"] for c in config["profiles"][0]["pluginConfig"] if c["name"] == plugin]
    return found


@pytest.mark.parametrize(
    ("cluster", "options"),
    [
        ("monday", []),
        ("monday", ["--view", "extended", "--policy", "spread", "--gpu-weight", "0"]),
        (IMPORTED, ["--view", "extended", "--gpu-weight", "100"]),
    ],
)
def test_kube_scheduler_loads_the_emitted_configuration_as_written(gpusched, tmp_path, cluster, options):
    config = tmp_path / "scheduler.yaml"
    result = gpusched("place", cluster, *options, "--emit-scheduler-config", config)
    assert result.exit_code in (0, 1), result.stderr
    loaded = load_and_write_back(config, tmp_path / "loaded.yaml")
    assert loaded.returncode == 0, loaded.stderr
    written, emitted = yaml.safe_load((tmp_path / "loaded.yaml").read_text()), yaml.safe_load(config.read_text())
    assert [p["schedulerName"] for p in written["profiles"]] == [p["schedulerName"] for p in emitted["profiles"]]
    strategy = plugin_args(written, "NodeResourcesFit")["scoringStrategy"]
    assert strategy == plugin_args(emitted, "NodeResourcesFit")["scoringStrategy"]  # nothing defaulted or dropped
    assert plugin_args(written, "PodTopologySpread")["defaultingType"] == "List"
    disabled = {p["name"] for p in written["profiles"][0]["plugins"]["score"]["disabled"]}
    assert disabled == {"NodeResourcesBalancedAllocation", "ImageLocality"}
    assert written["percentageOfNodesToScore"] == 100
    assert written["leaderElection"]["resourceName"] == emitted["profiles"][0]["schedulerName"]


def test_kube_scheduler_refuses_what_gpusched_refuses_to_write(gpusched, tmp_path):
    """The check above can fail: a weight of 101, which `--gpu-weight 101` refuses, is refused by the binary too."""
    config = tmp_path / "scheduler.yaml"
    assert gpusched("place", "monday", "--emit-scheduler-config", config).exit_code == 0
    broken = yaml.safe_load(config.read_text())
    plugin_args(broken, "NodeResourcesFit")["scoringStrategy"]["resources"][0]["weight"] = 101
    config.write_text(yaml.safe_dump(broken))
    loaded = load_and_write_back(config, tmp_path / "loaded.yaml")
    assert loaded.returncode != 0 and "not in valid range" in loaded.stderr


def node_manifest(name: str, state: ClusterState, cluster) -> dict:
    """The Node as the API has it once the device plugin registered: allocatable GPUs, cpu, memory, pods."""
    node = next(n for n in cluster.nodes if n.name == name)
    counts = {resource: str(count) for resource, count in advertised(state.node(name)).items()}
    allocatable = {"cpu": str(node.cpu), "memory": str(node.memory), "pods": "110", **counts}
    labels = {**node.labels, "kubernetes.io/hostname": name}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def pod_manifest(pod: dict, scheduler: str) -> dict:
    resource = f"nvidia.com/mig-{pod['mig_profile']}" if "mig_profile" in pod else "nvidia.com/gpu"
    resources = {"requests": {"cpu": str(pod["cpu"]), "memory": pod["memory"]}, "limits": {resource: str(pod["gpus"])}}
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": resources}
    spec = {"schedulerName": scheduler, "nodeSelector": pod["node_selector"], "containers": [container]}
    return {"metadata": {"name": pod["name"], "namespace": NAMESPACE}, "spec": spec}


def renamed(scenario: dict) -> dict:
    """The same scenario with the node names in reverse order: a placement a tie decided would change."""
    names = [node["name"] for node in scenario["cluster"]["nodes"]]
    flipped = copy.deepcopy(scenario)
    for node, rank in zip(flipped["cluster"]["nodes"], range(len(names), 0, -1), strict=True):
        node["name"] = f"n{rank}-{node['name']}"
    return flipped


def predicted(gpusched, write, scenario: dict, name: str, config: Path | None = None) -> dict[str, str]:
    args = ["--emit-scheduler-config", config] if config else []
    report = gpusched("place", write(name, scenario), "--view", "extended", "--gpu-weight", "10", *args, "--json")
    assert report.exit_code == 0, report.stderr
    return {r["pod"]: r["node"] for r in report.json()["results"]}


@pytest.fixture
def second_scheduler(control_plane, tmp_path):
    """Run `config` as a second kube-scheduler against the control plane (its own lease); stopped afterwards."""
    procs: list[subprocess.Popen] = []

    def start(config: Path) -> None:
        document = yaml.safe_load(config.read_text())
        document["clientConnection"] = {"kubeconfig": str(control_plane.kubeconfig)}  # the only addition
        running = tmp_path / "running.yaml"
        running.write_text(yaml.safe_dump(document))
        with (tmp_path / "second-scheduler.log").open("w") as log:
            binary = kube_scheduler(control_plane.info.version)
            procs.append(subprocess.Popen([binary, f"--config={running}", "--secure-port=0"],
                                          stdout=log, stderr=subprocess.STDOUT))  # fmt: skip

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def cluster_objects(control_plane):
    rest = Rest(control_plane.kubeconfig)
    cluster = Cluster.model_validate(SCENARIO["cluster"])
    state = ClusterState.from_cluster(cluster)
    rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    for node in cluster.nodes:
        rest.create("/api/v1/nodes", node_manifest(node.name, state, cluster))
    try:
        yield rest
    finally:
        rest.delete(f"/api/v1/namespaces/{NAMESPACE}/pods")
        for node in cluster.nodes:
            rest.delete(f"/api/v1/nodes/{node.name}")
        rest.delete(f"/api/v1/namespaces/{NAMESPACE}")
        rest.close()


def test_a_second_scheduler_with_the_profile_binds_pods_where_place_predicts(
    gpusched, write, tmp_path, cluster_objects, second_scheduler
):
    config = tmp_path / "scheduler.yaml"
    expected = predicted(gpusched, write, SCENARIO, "scenario.json", config)
    flipped = predicted(gpusched, write, renamed(SCENARIO), "renamed.json")
    assert {pod: node.split("-", 1)[1] for pod, node in flipped.items()} == expected  # no tie decides anything
    assert expected["s0"] == "m2" and expected["p0"] == "c"  # the GPU weights decide, MIG ones included
    second_scheduler(config)
    rest = cluster_objects
    for pod in SCENARIO["pods"]:
        rest.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod_manifest(pod, "gpu-binpack"))
        node, message = rest.wait(lambda name=pod["name"]: verdict(rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")),
                                  timeout=60)  # fmt: skip
        assert (node, message) == (expected[pod["name"]], None), pod["name"]
