"""`nvidia-smi mig -lgi` / `-lci` captured on a node: the MIG layout read exactly rather than inferred from counts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpusched.errors import InputError
from gpusched.scenarios.importer.nvsmi import read_capture
from gpusched.scenarios.importer.nvsmi_mig import SmiComputeInstances, SmiGpuInstances, split_instances

DUMP = Path(__file__).resolve().parents[2] / "data" / "import"
LGI = DUMP / "mig" / "h100-mig-1.lgi.txt"
LCI = DUMP / "mig" / "h100-mig-1.lci.txt"
IMPORT = ["import", "--nodes", DUMP / "nodes.json", "--pods", DUMP / "pods.json"]


def test_lgi_lists_each_instance_with_its_first_memory_slice():
    listing = read_capture(str(LGI))
    assert isinstance(listing, SmiGpuInstances)
    assert [(i.gpu, i.profile, i.start, i.size) for i in listing.instances] == [
        (0, "3g.40gb", 4, 4), (0, "2g.20gb", 2, 2), (0, "1g.10gb", 0, 1), (0, "1g.10gb", 1, 1)
    ]  # fmt: skip


def test_lci_says_which_gpu_instances_are_split():
    listing = read_capture(str(LCI))
    assert isinstance(listing, SmiComputeInstances) and len(listing.instances) == 5
    assert split_instances(listing) == [
        "GPU 0 GPU instance 2 is split into 2 compute instances (1c.3g.40gb, 1c.3g.40gb; nvidia-smi mig -lci): "
        "not modelled, the GPU instance is one device"
    ]


def test_import_takes_the_layout_from_lgi(gpusched, tmp_path):
    """Before: MIG positions had to be typed as memory-slice starts, or were inferred (3g.40gb first at 0)."""
    out = tmp_path / "cluster.yaml"
    inferred = gpusched(*IMPORT, "--output-file", out)
    assert inferred.exit_code in (0, 1)
    before = _layout(out)
    result = gpusched(
        *IMPORT, "--topology", f"h100-mig-1={LGI}", "--topology", f"h100-mig-1={LCI}", "--output-file", out
    )
    assert result.exit_code in (0, 1), result.stderr
    assert _layout(out) == [("1g.10gb", 0), ("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 4)] != before
    report = gpusched(*IMPORT, "--topology", f"h100-mig-1={LGI}", "-o", "json").json()
    (node,) = [n for n in report["nodes"] if n["node"] == "h100-mig-1"]
    assert node["sources"]["mig"] == f"nvidia-smi mig -lgi ({LGI})"
    assert "GPU instance 2 is split into 2 compute instances" in result.stderr + result.stdout


def test_a_listing_that_contradicts_the_node_is_said_and_the_layout_inferred(gpusched, write):
    text = LGI.read_text().replace("|   0  MIG 1g.10gb         19       10          1:1     |\n", "")
    report = gpusched(*IMPORT, "--topology", f"h100-mig-1={write('lgi.txt', text)}", "-o", "json").json()
    (node,) = [n for n in report["nodes"] if n["node"] == "h100-mig-1"]
    assert node["sources"]["mig"].endswith("(positions inferred)")
    found = [f for f in report["findings"] if f["node"] == "h100-mig-1" and f["kind"] == "capture-contradicts"]
    assert found and "the node advertises" in found[0]["message"]


def test_a_row_that_is_no_instance_names_the_file_and_line(write):
    path = write("bad.txt", LGI.read_text().replace("|   0  MIG 2g.20gb ", "|   zero  MIG 2g.20gb "))
    with pytest.raises(InputError, match=r"bad.txt: line 8: not a row of `nvidia-smi mig -lgi`"):
        read_capture(str(path))


def _layout(path: Path) -> list[tuple[str, int]]:
    nodes = yaml.safe_load(path.read_text())["nodes"]
    (node,) = [n for n in nodes if n["name"] == "h100-mig-1"]
    return [(i["profile"], i["start"]) for i in sorted(node["gpu"]["mig"], key=lambda i: i["start"])]
