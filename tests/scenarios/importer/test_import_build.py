"""`gpusched import`: the cluster model built from the kubectl dump in tests/data/import, where each fact came from,
and what happens with inputs that contradict each other or cannot be read."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from gpusched.errors import InputError
from gpusched.scenarios import load_cluster
from gpusched.scenarios.importer import build_cluster, read_dump_dir, read_inputs

DATA = Path(__file__).resolve().parents[2] / "data" / "import"
NODES, PODS, SLICES = (str(DATA / name) for name in ("nodes.json", "pods.json", "resourceslices.json"))
TOPOLOGY = [f"{p.stem}={p}" for p in sorted((DATA / "topology").iterdir())]
CLI_ARGS = ["import", "--nodes", NODES, "--pods", PODS, "--objects", SLICES] + [
    a for t in TOPOLOGY for a in ("--topology", t)
]


@pytest.fixture(scope="module")
def imported():
    return build_cluster(read_dump_dir(str(DATA)))


def _node(imported, name):
    return next(n for n in imported.cluster.nodes if n.name == name)


def _busy(node):
    return sorted((b.gpu, b.pod) for b in node.gpu.busy)


# --- what each node becomes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "count", "model", "memory", "islands", "replicas", "nvlink"),
    [
        ("dgx-h100-1", 8, "H100-80GB-HBM3", 79.6, [list(range(8))], 1, 450),  # catalogue: DGX H100
        ("p4d-1", 8, "A100-SXM4-40GB", 40.0, [list(range(8))], 1, 300),  # topo -m: NV12 x 25 GB/s
        ("g6e-ts-1", 4, "L40S", 45.0, [], 4, 300),  # topo -m: no NVLink; time-sliced 4 ways
        ("h100-mig-1", 1, "H100-80GB-HBM3", 79.6, [], 1, 300),
        ("gb200-tray-1", 4, "GB200", 186.0, [[0, 1, 2, 3]], 1, 900),
        ("traverse-1", 4, "Tesla-V100-SXM2-32GB", 31.7, [[0, 1], [2, 3]], 1, 75),  # NV3 x 25 GB/s
        ("dra-a100-1", 4, "A100-SXM4-80GB", 80.0, [], 1, 300),  # from the ResourceSlice
        ("g6-1", 1, "L4", 22.5, [], 1, 300),
        ("rtx-1", 2, "RTX-PRO-6000-Blackwell-Server-Edition", 95.6, [], 1, 300),
        ("p100-1", 1, "Tesla-P100-PCIE-16GB", 16.0, [], 1, 300),  # no GFD: nvidia-smi -q -x
    ],
)
def test_each_gpu_node(imported, name, count, model, memory, islands, replicas, nvlink):
    gpu = _node(imported, name).gpu
    assert (gpu.count, gpu.model, gpu.memory_gib, gpu.islands, gpu.replicas, gpu.nvlink_gbps) == (
        count, model, memory, islands, replicas, nvlink,
    )  # fmt: skip


def test_a_node_without_gpus_keeps_what_its_pods_leave():
    node = _node(build_cluster(read_dump_dir(str(DATA))), "cpu-1")  # coredns: 100m, 70Mi
    assert (node.gpu, node.cpu) == (None, "15900m")
    assert node.memory_bytes == 65536000 * 1024 - 70 * 2**20


def test_cpu_and_memory_left_count_every_bound_pod_that_has_not_finished(imported):
    node = _node(imported, "dgx-h100-1")
    # 223.5 cores allocatable; llm-pretrain-0 96, finetune-7b 32, dcgm-exporter 0.1; eval-nightly Succeeded
    assert node.cpu_milli == 223500 - 96000 - 32000 - 100


def test_cordons_taints_and_labels_are_kept(imported):
    node = _node(imported, "g6-1")
    assert node.unschedulable and [t.key for t in node.taints] == ["node.kubernetes.io/unschedulable"]
    assert node.labels["node.kubernetes.io/instance-type"] == "g6.xlarge"


# --- who holds what -------------------------------------------------------------------------------------------------


def test_running_pods_hold_gpus_best_fit_and_finished_pods_hold_nothing(imported):
    assert _busy(_node(imported, "dgx-h100-1")) == [(i, "ml/llm-pretrain-0") for i in range(4)] + [
        (4, "ml/finetune-7b"), (5, "ml/finetune-7b"),
    ]  # fmt: skip
    assert _busy(_node(imported, "p4d-1")) == [(0, "ml/bert-sweep-3"), (1, "ml/bert-sweep-4")]  # bert-sweep-5 Failed


def test_pairs_are_filled_a_pair_at_a_time(imported):
    assert _busy(_node(imported, "traverse-1")) == [(0, "lab/physics-sim"), (1, "lab/physics-sim")]


def test_time_sliced_replicas_are_held_lowest_gpu_first(imported):
    assert _busy(_node(imported, "g6e-ts-1")) == [
        (0, "serve/chat-0"),
        (0, "serve/chat-1"),
        (0, "serve/embed-0"),
        (0, "serve/embed-0"),
    ]
    assert imported.cluster.running["serve/chat-0"].shared


def test_mig_holders_take_instances_of_their_profile(imported):
    mig = {(m.profile, m.start): m.holder for m in _node(imported, "h100-mig-1").gpu.mig}
    assert mig == {
        ("3g.40gb", 4): "serve/rerank-0",
        ("2g.20gb", 0): None,
        ("1g.10gb", 2): "serve/asr-0",
        ("1g.10gb", 3): None,
    }


def test_dra_claims_name_exact_devices(imported):
    gpu = _node(imported, "dra-a100-1").gpu
    assert _busy(_node(imported, "dra-a100-1")) == [(1, "research/notebook-ana")]
    assert [(m.gpu, m.profile, m.start, m.holder) for m in gpu.mig] == [
        (3, "3g.40gb", 0, None), (3, "3g.40gb", 4, "research/probe-small"),
    ]  # fmt: skip


def test_running_needs_carry_priority_and_labels(imported):
    needs = imported.cluster.running["ml/llm-pretrain-0"]
    assert (needs.priority, needs.labels) == (1000, {"app": "llm-pretrain", "team": "foundation"})
    assert [t.key for t in needs.tolerations] == ["nvidia.com/gpu"]  # the API server's default ones dropped
    assert imported.cluster.running["serve/asr-0"].mig_profile == "1g.10gb"


def test_gb200_trays_sharing_a_clique_are_one_nvlink_domain(imported):
    (domain,) = imported.cluster.nvlink_domains
    assert (domain.nodes, domain.gbps) == (["gb200-tray-1", "gb200-tray-2"], 900)


def test_pending_gpu_pods_become_the_dumps_workload(imported):
    pods = {p.name: p for p in imported.pending.pods}
    assert sorted(pods) == ["ml/finetune-13b", "ml/llm-pretrain-1", "serve/asr-1", "serve/chat-2"]  # not the cpu pod
    assert (pods["ml/llm-pretrain-1"].gpus, pods["ml/llm-pretrain-1"].priority) == (8, 1000)
    assert (pods["serve/asr-1"].mig_profile, pods["serve/chat-2"].shared) == ("1g.10gb", True)


# --- the report ---------------------------------------------------------------------------------------------------


def test_the_report_names_the_source_of_each_fact(imported):
    sources = {n.node: n.sources for n in imported.report.nodes}
    assert sources["p4d-1"]["islands"].startswith("nvidia-smi topo -m (")
    assert sources["dgx-h100-1"]["islands"].startswith("catalogue: NVIDIA DGX H100 (https://")
    assert sources["dgx-h100-1"]["model"] == "label nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"
    assert sources["p100-1"]["model"].startswith("nvidia-smi -q -x (")
    assert sources["g6e-ts-1"]["replicas"] == "label nvidia.com/gpu.replicas=4"
    assert sources["dra-a100-1"]["mig"] == "ResourceSlice MIG devices (exact positions)"


def test_what_could_not_be_known_is_said_once_for_all_nodes(imported):
    assert (
        "warning: islands unknown for 2 node(s) (dra-a100-1, rtx-1): assumed none; give --topology NODE=FILE"
        in imported.report.summary
    )
    assert any(
        "'RTX-PRO-6000-Blackwell-Server-Edition' is not in gpusched's catalogue" in line
        for line in imported.report.summary
    )
    assert not imported.report.errors


def test_import_command_writes_a_cluster_file_that_loads_back(gpusched, tmp_path):
    out = tmp_path / "cluster.yaml"
    result = gpusched(*CLI_ARGS, "--output-file", out)
    assert result.exit_code == 0, result.stderr
    assert result.lines[0].startswith(
        "imported 12 nodes (11 with GPUs, 41 GPUs), 13 pods holding GPUs, 1 NVLink domain(s)"
    )
    assert load_cluster(str(out)) == build_cluster(read_dump_dir(str(DATA))).cluster
    assert not list(tmp_path.glob("*.partial"))


def test_import_json_report_and_json_cluster_file(gpusched, tmp_path):
    out = tmp_path / "cluster.json"
    report = gpusched(*CLI_ARGS, "--output-file", out, "--json").json()
    assert (report["gpus"], report["holders"], report["output"]) == (41, 13, str(out))
    assert json.loads(out.read_text())["nvlink_domains"][0]["gbps"] == 900


def test_cluster_to_stdout_and_report_to_stderr(gpusched):
    result = gpusched(*CLI_ARGS, "--output-file", "-")
    assert result.exit_code == 0
    assert result.stdout.startswith("nodes:\n") and result.stderr.startswith("imported 12 nodes")


def test_pods_out_writes_the_pending_pods(gpusched, tmp_path):
    out = tmp_path / "pending.yaml"
    assert gpusched(*CLI_ARGS, "--emit-pods", out).exit_code == 0
    assert "name: ml/llm-pretrain-1" in out.read_text()


# --- contradictions and bad inputs ---------------------------------------------------------------------------------


def _dump(tmp_path, edit):
    """A copy of the fixture's dump directory, nodes.json changed by `edit(items)`."""
    shutil.copytree(DATA, tmp_path, dirs_exist_ok=True)
    nodes = json.loads(Path(NODES).read_text())
    edit(nodes["items"])
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    return tmp_path


def _set(name, labels=None, allocatable=None):
    def edit(items):
        node = next(n for n in items if n["metadata"]["name"] == name)
        node["metadata"]["labels"].update(labels or {})
        for resources in (node["status"]["allocatable"], node["status"]["capacity"]):
            resources.update(allocatable or {})
            for key in [key for key, value in resources.items() if value is None]:
                del resources[key]

    return edit


def _import(directory):
    return build_cluster(read_dump_dir(str(directory)))


def test_allocatable_wins_over_labels_that_count_more_gpus(tmp_path):
    found = _import(_dump(tmp_path, _set("p4d-1", allocatable={"nvidia.com/gpu": "7"})))
    assert _node(found, "p4d-1").gpu.count == 7
    assert _node(found, "p4d-1").gpu.islands == [list(range(7))]
    messages = [f.message for f in found.report.findings if f.node == "p4d-1"]
    assert (
        "labels count 8 GPUs, allocatable gives 7: modelled the allocatable (the scheduler's count; GPUs may be unhealthy)"
        in messages
    )
    assert any("shows 8 GPUs, modelled 7" in m for m in messages)


def test_gpus_the_node_does_not_advertise_are_not_modelled(tmp_path):
    found = _import(_dump(tmp_path, _set("rtx-1", allocatable={"nvidia.com/gpu": None})))
    assert _node(found, "rtx-1").gpu is None
    assert any(f.kind == "gpus-not-advertised" and f.node == "rtx-1" for f in found.report.findings)


def test_a_holder_the_model_has_no_room_for_is_an_error(tmp_path):
    found = _import(_dump(tmp_path, _set("traverse-1", allocatable={"nvidia.com/gpu": "1"})))
    assert found.report.errors
    assert any(
        f.kind == "holder-overflow" and "lab/physics-sim holds 2 GPU unit(s)" in f.message
        for f in found.report.findings
    )


def test_mig_single_counts_instances_not_gpus(tmp_path):
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "14",
        "nvidia.com/gpu.memory": "4864",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-1g.5gb",
    }
    found = _import(_dump(tmp_path, _set("rtx-1", labels, {"nvidia.com/gpu": "14"})))
    gpu = _node(found, "rtx-1").gpu
    assert (gpu.model, gpu.count, gpu.memory_gib, gpu.mig_strategy, len(gpu.mig)) == (
        "A100-SXM4-40GB",
        2,
        40,
        "single",
        14,
    )


def test_a_mig_reconfiguration_in_progress_is_a_warning(tmp_path):
    found = _import(_dump(tmp_path, _set("h100-mig-1", {"nvidia.com/mig.config.state": "pending"})))
    assert any(f.kind == "mig-config-state" and "all-balanced is pending" in f.message for f in found.report.findings)


def test_mig_counts_in_labels_that_contradict_allocatable(tmp_path):
    found = _import(_dump(tmp_path, _set("h100-mig-1", {"nvidia.com/mig-1g.10gb.count": "3"})))
    assert any(f.kind == "labels-contradict-allocatable" and f.node == "h100-mig-1" for f in found.report.findings)


def test_no_nodes_is_nothing_usable(gpusched, tmp_path):
    (tmp_path / "nodes.json").write_text('{"apiVersion": "v1", "kind": "NodeList", "items": []}')
    result = gpusched("import", "--nodes", tmp_path / "nodes.json", "--output-file", tmp_path / "out.yaml")
    assert result.exit_code == 2 and "no Nodes: nothing to import" in result.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_unreadable_capture_exits_2_and_writes_nothing(gpusched, tmp_path):
    bad = tmp_path / "topo.txt"
    bad.write_bytes(b"\x89PNG\r\n")
    result = gpusched("import", "--nodes", NODES, "--topology", f"p4d-1={bad}", "--output-file", tmp_path / "out.yaml")
    assert result.exit_code == 2 and "not UTF-8 text" in result.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_a_bad_dra_object_names_its_field(gpusched, tmp_path):
    objects = json.loads(Path(SLICES).read_text())
    broken = copy.deepcopy(objects)
    broken["items"][0]["spec"]["devices"][0]["attributes"]["type"] = {"string": "gpu", "int": 1}
    (tmp_path / "objects.json").write_text(json.dumps(broken))
    result = gpusched("import", "--nodes", NODES, "--objects", tmp_path / "objects.json")
    assert result.exit_code == 2
    assert "items[0].spec.devices.0.attributes.type" in result.stderr


def test_argument_errors(gpusched):
    assert "give --nodes" in gpusched("import").stderr
    assert "drop --nodes" in gpusched("import", "--kubeconfig", "k", "--nodes", NODES).stderr
    assert "expected NODE=FILE" in gpusched("import", "--nodes", NODES, "--topology", "p4d-1").stderr


def test_other_kinds_in_objects_are_noted(tmp_path):
    (tmp_path / "classes.json").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"}}
                ],
            }
        )
    )
    found = build_cluster(read_inputs(NODES, None, [str(tmp_path / "classes.json")]))
    assert any(f.kind == "ignored-object" and "DeviceClass" in f.message for f in found.report.findings)


def test_a_directory_without_nodes_json_says_what_it_expects(tmp_path):
    with pytest.raises(InputError, match="no nodes.json: expected a kubectl dump directory"):
        read_dump_dir(str(tmp_path))


def test_a_node_whose_devices_contradict_each_other_is_kept_without_gpus(tmp_path):
    shutil.copytree(DATA, tmp_path, dirs_exist_ok=True)
    objects = json.loads(Path(SLICES).read_text())
    devices = objects["items"][0]["spec"]["devices"]
    overlap = copy.deepcopy(devices[-1])
    overlap["name"], overlap["attributes"]["profile"] = "gpu-3-mig-4g40gb-5-0", {"string": "4g.40gb"}
    devices.append(overlap)  # a 4g.40gb at slice 0, where a 3g.40gb already is
    (tmp_path / "resourceslices.json").write_text(json.dumps(objects))
    found = _import(tmp_path)
    assert _node(found, "dra-a100-1").gpu is None and len(found.cluster.nodes) == 12
    assert any(f.kind == "node-invalid" and "overlaps memory slices" in f.message for f in found.report.findings)
    assert found.report.errors


def test_replicas_advertised_as_gpu_shared_are_renamed(tmp_path):
    """renameByDefault: the device plugin advertises the replicas as nvidia.com/gpu.shared, and so does the model."""
    nodes = json.loads(Path(NODES).read_text())
    node = next(n for n in nodes["items"] if n["metadata"]["name"] == "g6e-ts-1")
    for status in ("capacity", "allocatable"):
        node["status"][status]["nvidia.com/gpu.shared"] = node["status"][status].pop("nvidia.com/gpu")
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    renamed = _node(build_cluster(read_dump_dir(str(tmp_path))), "g6e-ts-1")
    assert (renamed.gpu.count, renamed.gpu.replicas, renamed.gpu.rename_shared) == (4, 4, True)
    assert not _node(build_cluster(read_dump_dir(str(DATA))), "g6e-ts-1").gpu.rename_shared
