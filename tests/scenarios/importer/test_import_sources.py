"""The sources an import reads, each against real captures: nvidia-smi topo -m and -q -x, GFD labels, NVIDIA DRA
slices, the catalogue, MIG layouts from counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpusched.errors import InputError
from gpusched.models.dra import ResourceClaim, ResourceSlice
from gpusched.models.mig import profiles_for
from gpusched.scenarios.importer import SmiLog, SmiTopology, catalogue, read_capture
from gpusched.scenarios.importer.catalogue import GpuSpec, Server
from gpusched.scenarios.importer.gfd import model_name, read_labels
from gpusched.scenarios.importer.mig_layout import layout, per_gpu
from gpusched.scenarios.importer.nvidia_dra import claim_holders, read_slices
from gpusched.scenarios.importer.nvsmi import parse_smi_log, parse_topology

DATA = Path(__file__).resolve().parents[2] / "data" / "import"
TOPOLOGY = DATA / "topology"


def _text(name: str) -> str:
    return (TOPOLOGY / name).read_text()


# --- nvidia-smi topo -m ------------------------------------------------------------------------------------------


def test_p4d_capture_is_one_nvswitch_island_of_nv12():
    topo = read_capture(str(TOPOLOGY / "p4d-1.txt"))
    assert isinstance(topo, SmiTopology)
    assert (topo.gpus, topo.islands(), topo.fewest_links()) == (8, [list(range(8))], 12)


def test_tab_separated_capture_with_nic_rows_gives_nvlink_pairs():
    topo = read_capture(str(TOPOLOGY / "traverse-1.txt"))
    assert (topo.gpus, topo.islands(), topo.fewest_links()) == (4, [[0, 1], [2, 3]], 3)


def test_pcie_only_capture_has_no_islands():
    topo = read_capture(str(TOPOLOGY / "g6e-ts-1.txt"))
    assert (topo.gpus, topo.islands(), topo.fewest_links()) == (4, [], None)


def test_terminal_colour_codes_are_ignored():
    coloured = _text("p4d-1.txt").replace("        GPU0    GPU1", "\x1b[4m        GPU0\x1b[0m    \x1b[4mGPU1\x1b[0m")
    assert parse_topology(coloured, "coloured").islands() == [list(range(8))]


def test_truncated_topo_says_which_row_is_missing():
    text = _text("p4d-1.txt")
    cut = text[: text.index("GPU5    NV12")]
    with pytest.raises(InputError, match="truncated: no row for GPU5"):
        parse_topology(cut, "cut.txt")


def test_topo_cut_inside_a_row_is_refused():
    text = _text("traverse-1.txt")
    cut = text[: text.index("GPU3\tSYS") + len("GPU3\tSYS\tSYS")] + "\n"
    with pytest.raises(InputError, match="truncated: row GPU3 has 2 of 8 cells"):
        parse_topology(cut, "cut.txt")


def test_lopsided_matrix_is_refused():
    text = _text("traverse-1.txt").replace("GPU1\tNV3\t X", "GPU1\tSYS\t X")
    with pytest.raises(InputError, match="matrix disagrees: GPU0 to GPU1 is NV3, GPU1 to GPU0 is SYS"):
        parse_topology(text, "bad.txt")


def test_text_that_is_not_topo_output_is_refused(tmp_path):
    path = tmp_path / "smi.txt"
    path.write_text(
        "+-----------------------------------------------------------------------------+\n| NVIDIA-SMI 550 |\n"
    )
    with pytest.raises(InputError, match="not `nvidia-smi topo -m` output: no header row beginning with GPU0"):
        read_capture(str(path))


def test_non_utf8_capture_is_refused_with_the_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(_text("g6e-ts-1.txt").encode() + b"\xff\xfe")
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 0xff at offset \d+\)"):
        read_capture(str(path))


def test_missing_capture_is_named(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_capture(str(tmp_path / "absent.txt"))


# --- nvidia-smi -q -x --------------------------------------------------------------------------------------------


def test_q_x_capture_gives_product_memory_and_mig_mode():
    log = read_capture(str(TOPOLOGY / "p100-1.xml"))
    assert isinstance(log, SmiLog)
    (gpu,) = log.gpus
    assert (gpu.product, gpu.memory_mib, gpu.mig_enabled, gpu.mig_devices) == ("Tesla P100-PCIE-16GB", 16384, False, ())


def test_truncated_xml_is_refused_with_its_position():
    text = _text("p100-1.xml")
    with pytest.raises(InputError, match=r"malformed or truncated XML at line \d+ column \d+"):
        parse_smi_log(text[: len(text) // 2], "cut.xml")


def test_xml_that_is_not_nvidia_smi_is_refused():
    with pytest.raises(InputError, match=r"not `nvidia-smi -q -x` output: root element <topology>"):
        parse_smi_log('<?xml version="1.0"?><topology version="2.0"/>', "hwloc.xml")


def test_fewer_gpu_elements_than_attached_is_truncation():
    text = _text("p100-1.xml").replace("<attached_gpus>1</attached_gpus>", "<attached_gpus>8</attached_gpus>")
    with pytest.raises(InputError, match="truncated: <attached_gpus> says 8, found 1 <gpu> elements"):
        parse_smi_log(text, "q.xml")


def test_entity_declarations_are_refused():
    with pytest.raises(InputError, match="declares entities"):
        parse_smi_log('<!DOCTYPE x [<!ENTITY a "b">]><nvidia_smi_log/>', "evil.xml")


def test_mig_devices_are_counted_with_their_memory():
    text = """<nvidia_smi_log><attached_gpus>1</attached_gpus><gpu id="00000000:07:00.0">
      <product_name>NVIDIA A100-SXM4-80GB</product_name><fb_memory_usage><total>81920 MiB</total></fb_memory_usage>
      <mig_mode><current_mig>Enabled</current_mig></mig_mode>
      <mig_devices><mig_device><index>0</index><fb_memory_usage><total>40192 MiB</total></fb_memory_usage></mig_device>
      <mig_device><index>1</index><fb_memory_usage><total>9728 MiB</total></fb_memory_usage></mig_device></mig_devices>
    </gpu></nvidia_smi_log>"""
    (gpu,) = parse_smi_log(text, "mig.xml").gpus
    assert (gpu.mig_enabled, gpu.mig_devices) == (True, (40192, 9728))


# --- GFD labels ----------------------------------------------------------------------------------------------------


def _node_labels(name: str) -> dict[str, str]:
    nodes = json.loads((DATA / "nodes.json").read_text())["items"]
    return next(n for n in nodes if n["metadata"]["name"] == name)["metadata"]["labels"]


def test_nvidia_recorded_mixed_strategy_labels():
    """The labels NVIDIA published in cloud-native-docs for an H100 in the all-balanced configuration."""
    gfd = read_labels(_node_labels("h100-mig-1"))
    assert (gfd.model, gfd.count, gfd.memory_mib, gfd.replicas, gfd.mig_strategy) == (
        "H100-80GB-HBM3",
        1,
        81559,
        0,
        "mixed",
    )
    assert gfd.mig_counts == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert (gfd.mig_config, gfd.mig_config_state, gfd.machine) == ("all-balanced", "success", "PIO-4124GS-TNR-01-NC24B")


def test_single_strategy_and_sharing_suffixes_are_taken_apart():
    gfd = read_labels(
        {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", "nvidia.com/mig.strategy": "single"}
    )
    assert (gfd.model, gfd.single_profile) == ("A100-SXM4-40GB", "1g.5gb")
    assert read_labels({"nvidia.com/gpu.product": "Tesla-T4-SHARED"}).model == "Tesla-T4"


def test_plus_me_profiles_are_written_with_a_dot():
    gfd = read_labels({"nvidia.com/mig-1g.10gb.me.count": "1", "nvidia.com/mig-1g.10gb.count": "3"})
    assert gfd.mig_counts == {"1g.10gb": 3, "1g.10gb+me": 1}


def test_labels_not_as_documented_are_reported_not_trusted():
    gfd = read_labels({"nvidia.com/gpu.count": "eight", "nvidia.com/gpu.product": "NVIDIA-L4"})
    assert gfd.count is None and gfd.unreadable == ("nvidia.com/gpu.count='eight' is not a whole number",)


@pytest.mark.parametrize(
    ("nvml", "model"),
    [
        ("NVIDIA H100 80GB HBM3", "H100-80GB-HBM3"),
        ("Tesla P100-PCIE-16GB", "Tesla-P100-PCIE-16GB"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
        ("NVIDIA RTX PRO 6000 Blackwell (Server)", "RTX-PRO-6000-Blackwell-Server"),
    ],
)
def test_model_names_follow_gfds_sanitising(nvml, model):
    assert model_name(nvml) == model


# --- the catalogue -----------------------------------------------------------------------------------------------


def test_every_catalogue_fact_names_its_source():
    for gpu in catalogue().gpus:
        assert gpu.sources["memory"].startswith("https://")
    for server in catalogue().servers:
        assert all(source.startswith("https://") for source in server.sources.values())
        if server.nvlink != "unknown":
            assert "nvlink" in server.sources


def test_a_catalogue_fact_without_a_source_is_refused():
    with pytest.raises(ValidationError, match="no source for count"):
        Server(name="x", instance_types=("x.large",), count=8, nvlink="unknown", sources={})
    with pytest.raises(ValidationError, match="no source for nvlink"):
        GpuSpec(model="X", memory_gib=8, architecture="ampere", nvlink=False, sources={"memory": "https://example.com"})


@pytest.mark.parametrize(
    ("labels", "model", "count", "server"),
    [
        ({"node.kubernetes.io/instance-type": "p5.48xlarge"}, None, None, "AWS p5.48xlarge"),
        ({"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"}, None, None, "Azure ND H100 v5"),
        ({"node.kubernetes.io/instance-type": "a2-megagpu-16g"}, None, None, "GCE a2-highgpu-8g / a2-megagpu-16g"),
        ({"nvidia.com/gpu.machine": "NVIDIA-DGX-A100-920-23687-2530-000"}, None, None, "NVIDIA DGX A100"),
        ({}, "H100-SXM5-80GB", 8, "NVIDIA HGX H100 8-GPU"),
        ({}, "GB200", 4, "NVIDIA GB200 NVL72 compute tray"),
    ],
)
def test_servers_are_found_by_instance_type_machine_or_product(labels, model, count, server):
    assert catalogue().server(labels, model, count).name == server


def test_instance_types_give_their_gpu_counts():
    found = catalogue().server({"node.kubernetes.io/instance-type": "a2-megagpu-16g"}, None, None)
    assert (found.model, found.gpu_count("a2-megagpu-16g"), found.nvlink) == ("A100-SXM4-40GB", 16, "all")
    g5 = catalogue().server({"node.kubernetes.io/instance-type": "g5.12xlarge"}, None, None)
    assert (g5.model, g5.gpu_count("g5.12xlarge"), g5.nvlink) == ("A10G", 4, "none")


def test_unknown_products_match_nothing():
    assert catalogue().gpu("RTX-PRO-6000-Blackwell-Server-Edition") is None
    assert catalogue().server({}, "RTX-PRO-6000-Blackwell-Server-Edition", 8) is None


def test_catalogue_mig_gpus_have_gpuscheds_profile_tables():
    for model in ("A100-SXM4-40GB", "A100-SXM4-80GB", "H100-80GB-HBM3", "H100-NVL", "H200", "B200", "GB200"):
        spec = catalogue().gpu(model)
        assert profiles_for(spec.model, spec.memory_gib), model


# --- MIG layouts from counts --------------------------------------------------------------------------------------


def test_all_balanced_counts_fit_one_gpu():
    profiles = profiles_for("H100-80GB-HBM3", 79.6)
    found = layout(profiles, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, [0])
    assert sorted(name for _, name, _ in found) == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]


def test_counts_that_cannot_fit_give_none():
    assert layout(profiles_for("A100-SXM4-80GB", 80), {"1g.10gb": 8}, [0]) is None
    assert len(layout(profiles_for("A100-SXM4-80GB", 80), {"1g.10gb": 8}, [0, 1])) == 8


@pytest.mark.parametrize(
    ("profile", "fits"), [("1g.10gb", 7), ("1g.20gb", 4), ("2g.20gb", 3), ("3g.40gb", 2), ("7g.80gb", 1)]
)
def test_instances_per_gpu_of_one_profile(profile, fits):
    assert per_gpu(profiles_for("A100-SXM4-80GB", 80)[profile]) == fits


# --- NVIDIA DRA driver slices ------------------------------------------------------------------------------------


def _dra_objects():
    items = json.loads((DATA / "resourceslices.json").read_text())["items"]
    slices = [ResourceSlice.model_validate(i) for i in items if i["kind"] == "ResourceSlice"]
    claims = [ResourceClaim.model_validate(i) for i in items if i["kind"] == "ResourceClaim"]
    return slices, claims


def test_slices_give_gpus_and_mig_devices_at_their_placements():
    slices, _ = _dra_objects()
    node = read_slices(slices)["dra-a100-1"]
    assert sorted(node.gpus) == [0, 1, 2]
    assert node.gpus[0].product == "NVIDIA A100-SXM4-80GB" and node.gpus[0].memory_bytes == 80 * 2**30
    assert [(m.gpu, m.profile, m.start) for m in node.migs] == [(3, "3g.40gb", 0), (3, "3g.40gb", 4)]


def test_claims_name_the_pods_holding_devices():
    _, claims = _dra_objects()
    assert claim_holders(claims) == {
        ("dra-a100-1", "gpu-1"): "research/notebook-ana",
        ("dra-a100-1", "gpu-3-mig-3g40gb-9-4"): "research/probe-small",
    }
