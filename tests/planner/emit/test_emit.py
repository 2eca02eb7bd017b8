"""Emitted configuration, end to end through the CLI: `place --emit-scheduler-config`, `gang --emit-kueue` and
`mig plan --emit mig-parted`. Each file is parsed back and checked against the API it claims to be (pydantic models
with extra='forbid' of the fields used, and each API's own rules) and against the cluster it was made from; bad
input exits 2 and writes nothing. tests/conformance/test_emit_scheduler.py runs the real kube-scheduler on it.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from gpusched.models.mig import placement_error, profiles_for
from gpusched.models.quantity import parse_quantity
from gpusched.scenarios import load_cluster

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "mig"
INFERENCE, ONE_GPU = str(EXAMPLES / "inference.yaml"), str(EXAMPLES / "one-gpu.yaml")
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def documents(path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def comments(path) -> list[str]:
    return [line[2:] for line in path.read_text().splitlines() if line.startswith("# ")]


# --- KubeSchedulerConfiguration --------------------------------------------------------------------------------
# The fields gpusched writes, as k8s.io/kube-scheduler/config/v1 types.go (KubeSchedulerConfiguration,
# KubeSchedulerProfile, Plugins, PluginSet, Plugin, PluginConfig) and types_pluginargs.go (NodeResourcesFitArgs,
# ScoringStrategy, ResourceSpec, PodTopologySpreadArgs) define them; validation_pluginargs.go bounds the weights.


class ResourceSpec(Strict):
    name: str
    weight: int = Field(ge=1, le=100)


class ScoringStrategy(Strict):
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
    resources: list[ResourceSpec]


class NodeResourcesFitArgs(Strict):
    scoringStrategy: ScoringStrategy


class PodTopologySpreadArgs(Strict):
    defaultingType: Literal["System", "List"]


class PluginConfig(Strict):
    name: Literal["NodeResourcesFit", "PodTopologySpread"]
    args: NodeResourcesFitArgs | PodTopologySpreadArgs


class Plugin(Strict):
    name: str


class PluginSet(Strict):
    disabled: list[Plugin]


class Plugins(Strict):
    score: PluginSet


class Profile(Strict):
    schedulerName: str
    plugins: Plugins
    pluginConfig: list[PluginConfig]


class LeaderElection(Strict):
    leaderElect: bool
    resourceName: str
    resourceNamespace: str


class KubeSchedulerConfiguration(Strict):
    apiVersion: Literal["kubescheduler.config.k8s.io/v1"]
    kind: Literal["KubeSchedulerConfiguration"]
    percentageOfNodesToScore: int = Field(ge=0, le=100)
    leaderElection: LeaderElection
    profiles: list[Profile] = Field(min_length=1)


def fit_args(config: KubeSchedulerConfiguration) -> ScoringStrategy:
    (fit,) = [c.args for c in config.profiles[0].pluginConfig if c.name == "NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    return fit.scoringStrategy


def advertised_names(gpusched, cluster: str) -> set[str]:
    """The resource names the device plugins of the cluster advertise, as `gpusched advertised` reports them."""
    return {name for counts in gpusched("advertised", cluster, "--json").json().values() for name in counts}


def test_scheduler_config_is_the_gpu_binpack_profile_with_every_advertised_gpu_resource(gpusched, tmp_path):
    out = tmp_path / "scheduler.yaml"
    result = gpusched("place", "monday", "--emit-scheduler-config", out)
    assert result.exit_code == 0, result.stderr
    (doc,) = documents(out)
    config = KubeSchedulerConfiguration.model_validate(doc)
    assert config.profiles[0].schedulerName == "gpu-binpack"
    strategy = fit_args(config)
    weights = {r.name: r.weight for r in strategy.resources}
    assert strategy.type == "MostAllocated"
    gpu_names = advertised_names(gpusched, "monday")
    assert {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"} <= gpu_names
    assert weights == {**dict.fromkeys(gpu_names, 10), "cpu": 1, "memory": 1}
    assert config.percentageOfNodesToScore == 100
    assert (
        config.leaderElection.resourceName == "gpu-binpack"
    )  # a second scheduler must not wait on kube-scheduler's lease
    assert "schedulerName: gpu-binpack" in " ".join(comments(out))
    assert "KubeSchedulerConfiguration -> " + str(out) in result.stdout
    assert result.lines[0].startswith("notebook-0 -> ")


def test_scheduler_config_follows_policy_and_weight(gpusched, tmp_path):
    out = tmp_path / "s.yaml"
    result = gpusched("place", "weekend", "--view", "extended", "--policy", "spread", "--gpu-weight", "25",
                      "--emit-scheduler-config", out)  # fmt: skip
    assert result.exit_code == 1  # spreading leaves train-8 Pending; the file is written all the same
    strategy = fit_args(KubeSchedulerConfiguration.model_validate(documents(out)[0]))
    assert strategy.type == "LeastAllocated"
    assert {r.name: r.weight for r in strategy.resources}["nvidia.com/gpu"] == 25


def test_gpu_weight_0_leaves_gpus_out_rather_than_writing_a_weight_the_scheduler_defaults_to_1(gpusched, tmp_path):
    out = tmp_path / "s.yaml"
    result = gpusched("place", "weekend", "--view", "extended", "--policy", "spread", "--gpu-weight", "0",
                      "--emit-scheduler-config", out)  # fmt: skip
    assert result.exit_code == 1  # the default profile: train-8 Pending
    strategy = fit_args(KubeSchedulerConfiguration.model_validate(documents(out)[0]))
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 1), ("memory", 1)]


def test_scheduler_config_to_stdout_moves_the_report_to_stderr(gpusched):
    result = gpusched("place", "weekend", "--view", "extended", "--gpu-weight", "10", "--emit-scheduler-config", "-")
    assert result.exit_code == 0
    KubeSchedulerConfiguration.model_validate(yaml.safe_load(result.stdout))
    assert "train-8 -> dgx-a" in result.stderr and "KubeSchedulerConfiguration -> stdout" in result.stderr


def test_scheduler_config_json_adds_the_emitted_profile(gpusched, tmp_path):
    out = tmp_path / "s.yaml"
    report = gpusched("place", "weekend", "--json", "--emit-scheduler-config", out).json()
    assert report["scheduler_config"]["scheduler_name"] == "gpu-binpack"
    assert report["scheduler_config"]["documents"] == documents(out)
    assert {r["pod"] for r in report["results"]} >= {"train-8"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "topology"], "kube-scheduler cannot score NVLink islands"),
        (["--view", "extended", "--gpu-weight", "101"], "resource weights 1 to 100, got --gpu-weight 101"),
        (["--gpu-weight", "10"], "--gpu-weight scores the scheduler's integers"),  # place refuses it: no file either
        (["--json", "--emit-scheduler-config", "-"], "-o json and --emit-scheduler-config - both want stdout"),
        (["--emit-scheduler-config", " "], "expected a file name or - for stdout"),
    ],
)
def test_scheduler_config_bad_input_writes_nothing(gpusched, tmp_path, args, message):
    out = tmp_path / "s.yaml"
    result = gpusched("place", "monday", "--emit-scheduler-config", out, *args)
    assert result.exit_code == 2 and message in result.stderr
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_unwritable_target_is_exit_2(gpusched, tmp_path):
    result = gpusched("place", "monday", "--emit-scheduler-config", tmp_path / "missing" / "s.yaml")
    assert result.exit_code == 2 and "cannot write" in result.stderr
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_a_directory_target_is_exit_2_and_a_device_is_written_through_not_replaced(gpusched, tmp_path):
    result = gpusched("place", "monday", "--emit-scheduler-config", tmp_path)
    assert (
        result.exit_code == 2 and "is a directory, expected a file" in result.stderr and list(tmp_path.iterdir()) == []
    )
    assert gpusched("place", "monday", "--emit-scheduler-config", "/dev/null").exit_code == 0
    assert Path("/dev/null").is_char_device()


def test_bad_cluster_writes_no_scheduler_config(gpusched, write, tmp_path):
    path = write("bad.json", {"nodes": [{"name": "n", "gpu": {"model": "L4", "count": -1, "memory_gib": 24}}]})
    result = gpusched("place", path, "--emit-scheduler-config", tmp_path / "s.yaml")
    assert result.exit_code == 2 and not (tmp_path / "s.yaml").exists()


# --- Kueue -----------------------------------------------------------------------------------------------------
# The fields gpusched writes, as sigs.k8s.io/kueue apis/kueue/v1beta1 resourceflavor_types.go (ResourceFlavorSpec),
# clusterqueue_types.go (ClusterQueueSpec, ResourceGroup, FlavorQuotas, ResourceQuota, the name patterns and list
# bounds) and localqueue_types.go (LocalQueueSpec) define them.

Name = Annotated[str, StringConstraints(pattern=DNS_SUBDOMAIN, max_length=253)]


class Metadata(Strict):
    name: Name
    namespace: str | None = None


class ResourceFlavorSpec(Strict):
    nodeLabels: dict[str, str] = Field(max_length=8)


class ResourceFlavor(Strict):
    apiVersion: Literal["kueue.x-k8s.io/v1beta1"]
    kind: Literal["ResourceFlavor"]
    metadata: Metadata
    spec: ResourceFlavorSpec


class ResourceQuota(Strict):
    name: str
    nominalQuota: str | int


class FlavorQuotas(Strict):
    name: Name
    resources: list[ResourceQuota] = Field(min_length=1, max_length=64)


class ResourceGroup(Strict):
    coveredResources: list[str] = Field(min_length=1, max_length=64)
    flavors: list[FlavorQuotas] = Field(min_length=1, max_length=64)


class LabelSelector(Strict):
    matchLabels: dict[str, str] | None = None


class ClusterQueueSpec(Strict):
    namespaceSelector: LabelSelector
    resourceGroups: list[ResourceGroup] = Field(max_length=16)


class ClusterQueue(Strict):
    apiVersion: Literal["kueue.x-k8s.io/v1beta1"]
    kind: Literal["ClusterQueue"]
    metadata: Metadata
    spec: ClusterQueueSpec


class LocalQueueSpec(Strict):
    clusterQueue: Name


class LocalQueue(Strict):
    apiVersion: Literal["kueue.x-k8s.io/v1beta1"]
    kind: Literal["LocalQueue"]
    metadata: Metadata
    spec: LocalQueueSpec


LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def kueue_objects(path) -> tuple[list[ResourceFlavor], ClusterQueue, LocalQueue]:
    """Parse the file and check what Kueue's webhooks and CEL rules check for these fields."""
    docs = documents(path)
    flavors = [ResourceFlavor.model_validate(d) for d in docs if d["kind"] == "ResourceFlavor"]
    (queue,) = [ClusterQueue.model_validate(d) for d in docs if d["kind"] == "ClusterQueue"]
    (local,) = [LocalQueue.model_validate(d) for d in docs if d["kind"] == "LocalQueue"]
    assert len(docs) == len(flavors) + 2
    assert len({f.metadata.name for f in flavors}) == len(flavors)
    for flavor in flavors:
        assert all(len(v) <= 63 and LABEL_VALUE.match(v) for v in flavor.spec.nodeLabels.values())
    assert local.spec.clusterQueue == queue.metadata.name and local.metadata.namespace
    names = [f.name for group in queue.spec.resourceGroups for f in group.flavors]
    assert sorted(names) == sorted(f.metadata.name for f in flavors)  # each flavor exists, in one group
    covered = [r for group in queue.spec.resourceGroups for r in group.coveredResources]
    assert len(covered) == len(set(covered))  # a resource belongs to one group
    for group in queue.spec.resourceGroups:
        for flavor in group.flavors:
            assert [r.name for r in flavor.resources] == group.coveredResources  # same resources, same order
            assert all(parse_quantity(r.nominalQuota) >= 0 for r in flavor.resources)
    return flavors, queue, local


def quotas(queue: ClusterQueue) -> dict[str, dict[str, Decimal]]:
    return {f.name: {r.name: parse_quantity(r.nominalQuota) for r in f.resources}
            for group in queue.spec.resourceGroups for f in group.flavors}  # fmt: skip


def test_kueue_flavor_per_gpu_product_with_the_nodes_whole_allocatable(gpusched, tmp_path):
    out = tmp_path / "kueue.yaml"
    result = gpusched("gang", "monday", "--jobs", "training", "--emit-kueue", out)
    assert result.exit_code == 0, result.stderr
    flavors, queue, local = kueue_objects(out)
    cluster = load_cluster("monday")
    advertised = gpusched("advertised", "monday", "--json").json()
    products = {node.labels["nvidia.com/gpu.product"] for node in cluster.nodes}
    assert {tuple(f.spec.nodeLabels.items()) for f in flavors} == {(("nvidia.com/gpu.product", p),) for p in products}
    by_product = {f.spec.nodeLabels["nvidia.com/gpu.product"]: f.metadata.name for f in flavors}
    found = quotas(queue)
    for product, flavor in by_product.items():
        nodes = [n for n in cluster.nodes if n.labels["nvidia.com/gpu.product"] == product]
        assert found[flavor]["cpu"] == sum(parse_quantity(n.cpu) for n in nodes)
        assert found[flavor]["memory"] == sum(parse_quantity(n.memory) for n in nodes)
        for resource in advertised_names(gpusched, "monday"):
            assert found[flavor][resource] == sum(advertised[n.name].get(resource, 0) for n in nodes)
    assert found[by_product["NVIDIA-A100-SXM4-80GB"]]["nvidia.com/gpu"] == 16
    assert queue.metadata.name == "training" and local.metadata.namespace == "default"
    assert (
        "label each Job in namespace default with kueue.x-k8s.io/queue-name: training (blocker, llm-a, llm-b)"
        in result.stdout
    )


def test_kueue_queue_and_namespace_options_and_the_json_label(gpusched, tmp_path):
    out = tmp_path / "kueue.yaml"
    report = gpusched("gang", "monday", "--jobs", "training", "--emit-kueue", out, "--queue", "gpu-jobs",
                      "--namespace", "research", "--json").json()  # fmt: skip
    _, queue, local = kueue_objects(out)
    assert (queue.metadata.name, local.metadata.name, local.metadata.namespace) == ("gpu-jobs", "gpu-jobs", "research")
    assert report["kueue"]["label"] == {"kueue.x-k8s.io/queue-name": "gpu-jobs"}
    assert report["kueue"]["documents"] == documents(out) and report["jobs"]


def test_kueue_without_product_labels_or_cpu_says_what_to_label_and_what_is_not_covered(gpusched, tmp_path):
    result = gpusched("gang", "training", "--emit-kueue", "-")
    assert result.exit_code == 0
    (flavor,) = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "ResourceFlavor"]
    assert flavor["spec"]["nodeLabels"] == {"gpusched.io/gpu-model": "A100-SXM4-80GB"}
    (queue,) = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "ClusterQueue"]
    assert queue["spec"]["resourceGroups"][0]["coveredResources"] == ["nvidia.com/gpu"]
    assert "kubectl label node dgx-a gpusched.io/gpu-model=A100-SXM4-80GB" in result.stderr
    assert "cpu and memory not covered" in result.stderr
    assert "makespan" in result.stderr  # the report moved to stderr


def test_kueue_names_a_job_no_flavor_can_ever_admit(gpusched, write, tmp_path):
    jobs = write("jobs.yaml", {"jobs": [
        {"name": "fits", "pods": 2, "gpus_per_pod": 8, "duration": 60, "cpu": 64, "memory": "512Gi"},
        {"name": "too-big", "pods": 3, "gpus_per_pod": 8, "duration": 60},
        {"name": "wrong-model", "pods": 1, "gpus_per_pod": 2, "duration": 60, "model": "H100-SXM5-80GB"},
    ]})  # fmt: skip
    report = gpusched("gang", "monday", "--jobs", jobs, "--emit-kueue", tmp_path / "k.yaml", "--json").json()
    admission = {job["job"]: job for job in report["kueue"]["jobs"]}
    assert admission["fits"]["flavors"] == ["nvidia-a100-sxm4-80gb"]
    assert admission["fits"]["requests"] == {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "16"}
    assert admission["too-big"]["flavors"] == [] and "never admits it" in admission["too-big"]["reason"]
    assert admission["wrong-model"]["reason"] == "no flavor has GPU model H100-SXM5-80GB: Kueue never admits it"
    text = gpusched("gang", "monday", "--jobs", jobs, "--emit-kueue", tmp_path / "k.yaml")
    assert "! too-big: no flavor's quota holds all of it (nvidia.com/gpu 24): Kueue never admits it" in text.lines


def test_kueue_says_a_job_asking_for_what_the_queue_does_not_cover_is_never_admitted(gpusched, write, tmp_path):
    jobs = write("jobs.yaml", {"jobs": [{"name": "j", "pods": 1, "gpus_per_pod": 1, "duration": 60, "cpu": 4}]})
    report = gpusched("gang", "training", "--jobs", jobs, "--emit-kueue", tmp_path / "k.yaml", "--json").json()
    (job,) = report["kueue"]["jobs"]
    assert job["flavors"] == [] and job["reason"].startswith("the ClusterQueue does not cover cpu")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--namespace", "Research"], "--namespace: 'Research' is not a valid name"),
        (["--queue", "gpu_jobs"], "--queue: 'gpu_jobs' is not a valid name"),
        (["--json", "--emit-kueue", "-"], "-o json and --emit-kueue - both want stdout"),
        (["--mode", "fifo"], "Invalid value for '--mode': 'fifo' is not one of 'pod', 'gang'"),
    ],
)
def test_kueue_bad_input_writes_nothing(gpusched, tmp_path, args, message):
    result = gpusched("gang", "monday", "--jobs", "training", "--emit-kueue", tmp_path / "k.yaml", *args)
    assert result.exit_code == 2 and message in result.stderr
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_kueue_needs_gpu_nodes(gpusched, write, tmp_path):
    cluster = write("c.json", {"nodes": [{"name": "cpu-only", "cpu": 8, "memory": "32Gi"}]})
    jobs = write("j.json", {"jobs": [{"name": "j", "pods": 1, "gpus_per_pod": 1, "duration": 1}]})
    result = gpusched("gang", cluster, "--jobs", jobs, "--emit-kueue", tmp_path / "k.yaml")
    assert result.exit_code == 2 and "no GPU nodes" in result.stderr and not (tmp_path / "k.yaml").exists()


# --- mig-parted ------------------------------------------------------------------------------------------------
# NVIDIA/mig-parted api/spec/v1/spec.go (Spec, MigConfigSpec and their UnmarshalJSON checks) and
# pkg/types/mig_profile.go (ParseMigProfile: [Cc.]Gg.Ngb[+me], slice counts 1, 2, 3, 4, 6, 7 or 8).

PROFILE = re.compile(r"^(?:([1234678])c\.)?([1234678])g\.(\d+)gb(?:\+(me))?$")


def check_mig_parted_spec(doc: dict) -> None:
    assert set(doc) <= {"version", "mig-configs"} and doc["version"] == "v1"
    assert doc["mig-configs"], "at least one entry in 'mig-configs' is required"
    for name, entries in doc["mig-configs"].items():
        assert entries, f"at least one entry in {name!r} is required"
        for entry in entries:
            assert set(entry) <= {"device-filter", "devices", "mig-enabled", "mig-devices"}
            assert {"devices", "mig-enabled"} <= set(entry)
            devices = entry["devices"]
            assert devices == "all" or (isinstance(devices, list) and all(type(d) is int for d in devices))
            assert type(entry["mig-enabled"]) is bool
            if entry["mig-enabled"]:
                counts = entry["mig-devices"]
                assert all(PROFILE.match(p) for p in counts) and all(type(n) is int and n >= 0 for n in counts.values())
                assert any(n > 0 for n in counts.values()), "all counts for all MigProfiles are 0"
            else:
                assert not entry.get("mig-devices")


def placeable(profiles, counts: dict[str, int]) -> bool:
    """Whether instances of these counts fit on one GPU at some legal starts: a search over gpusched's MIG table."""
    wanted = sorted((p for p, n in counts.items() for _ in range(n)), key=lambda p: -profiles[p].memory_slices)

    def search(layout: list[tuple[str, int]], rest: list[str]) -> bool:
        if not rest:
            return True
        return any(
            placement_error(profiles, [*layout, (rest[0], start)]) is None and search([*layout, (rest[0], start)], rest[1:])
            for start in profiles[rest[0]].starts
        )  # fmt: skip

    return search([], wanted)


def labels_from(path) -> dict[str, str]:
    found = [
        re.fullmatch(r"kubectl label node (\S+) nvidia\.com/mig\.config=(\S+) --overwrite", c) for c in comments(path)
    ]
    return {m.group(1): m.group(2) for m in found if m}


@pytest.mark.parametrize(("cluster", "demand"), [(INFERENCE, "3g.40gb=10,1g.10gb=14"),
                                                 (ONE_GPU, "3g.40gb=1,2g.20gb=2")])  # fmt: skip
def test_mig_parted_file_is_a_valid_config_and_every_gpu_layout_is_placeable(gpusched, tmp_path, cluster, demand):
    out = tmp_path / "mig.yaml"
    result = gpusched("mig", "plan", cluster, "--demand", demand, "--emit-mig-parted", out)
    assert result.exit_code in (0, 1), result.stderr
    assert f"mig-parted config -> {out}" in result.stdout
    (doc,) = documents(out)
    check_mig_parted_spec(doc)
    plan = gpusched("mig", "plan", cluster, "--demand", demand, "--json").json()
    assert doc == plan["mig_parted"]
    labels = labels_from(out)
    assert labels == plan["labels"] and set(labels.values()) == set(doc["mig-configs"])
    model = {node.name: node for node in load_cluster(cluster).nodes}
    after = {(c["node"], c["gpu"]): c["after"] for c in plan["changes"]}
    for node_name, config in labels.items():
        gpu = model[node_name].gpu
        profiles = profiles_for(gpu.model, gpu.memory_gib)
        for index in range(gpu.count):
            (entry,) = [e for e in doc["mig-configs"][config] if index in e["devices"]]
            counts = entry.get("mig-devices", {}) if entry["mig-enabled"] else {}
            assert placeable(profiles, counts) if counts else not entry["mig-enabled"]
            planned = after.get((node_name, index), [{"profile": m.profile} for m in gpu.mig if m.gpu == index])
            assert counts == {p: sum(i["profile"] == p for i in planned) for p in {i["profile"] for i in planned}}


def test_placement_search_refuses_what_no_gpu_holds():
    profiles = profiles_for("A100-SXM4-80GB", 80)
    assert placeable(profiles, {"4g.40gb": 1, "3g.40gb": 1}) and placeable(profiles, {"1g.10gb": 7})
    assert not placeable(profiles, {"1g.10gb": 8}) and not placeable(profiles, {"7g.80gb": 1, "1g.10gb": 1})
    assert not placeable(profiles, {"3g.40gb": 2, "1g.10gb": 1})  # 7 compute slices at most


def test_mig_parted_to_stdout_and_nothing_when_nothing_changes(gpusched, tmp_path):
    result = gpusched("mig", "plan", ONE_GPU, "--demand", "2g.20gb=1", "--emit-mig-parted", "-")
    check_mig_parted_spec(yaml.safe_load(result.stdout))
    assert "mig-parted config -> stdout" in result.stderr
    out = tmp_path / "none.yaml"
    result = gpusched("mig", "plan", INFERENCE, "--demand", "1g.10gb=1", "--emit-mig-parted", out)
    assert result.exit_code == 0 and not out.exists()
    assert f"mig-parted config not written ({out}): no GPU to reconfigure" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--emit", "kueue", "x.yaml"], "No such option: --emit"),
        (["--emit-mig-parted", "-", "--json"], "-o json and --emit-mig-parted - both want stdout"),
        (["--demand", "5g.50gb=1", "--emit-mig-parted", "x.yaml"], "5g.50gb"),
    ],
)
def test_mig_parted_bad_input_writes_nothing(gpusched, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    demand = [] if "--demand" in args else ["--demand", "1g.10gb=9"]
    result = gpusched("mig", "plan", INFERENCE, *demand, *args)
    assert result.exit_code == 2 and message in result.stderr
    assert result.stdout == "" and list(tmp_path.iterdir()) == []
