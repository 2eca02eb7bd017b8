"""frag and map --output-file: the pictures are real (PNG, SVG, PDF) and keep a readable size from 5 to 2,000 nodes,
the map's states agree with frag and the cluster, stranded only where a pod of the size could ever fit, bad paths
write nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from gpusched.cli.plots import COLOURS

SIZES = (1, 2, 4, 8)


def _pixels_of(image, colour: str) -> int:
    """How many pixels have exactly this colour (cell interiors are flat; only edges are antialiased)."""
    rgb = to_rgb(colour)
    return int((abs(image[:, :, :3] - rgb) < 0.01).all(axis=2).sum())


def _png(path: Path):
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return imread(path)


# --- frag --plot ---------------------------------------------------------------------------------------------------


def test_frag_plot_is_a_png_and_the_report_is_unchanged(gpusched, tmp_path):
    target = tmp_path / "frag.png"
    plain = gpusched("frag", "fragmented")
    drawn = gpusched("frag", "fragmented", "--output-file", target)
    assert drawn.exit_code == 0
    assert drawn.lines == [*plain.lines, f"wrote {target}"]
    image = _png(target)
    height, width, channels = image.shape
    assert channels == 4 and 300 < height < 1500 and 800 < width < 3000
    assert _pixels_of(image, COLOURS["count"]) > 1000  # the stranded-by-count bars (4 and 8 GPUs) are drawn
    assert _pixels_of(image, COLOURS["island"]) > 1000


def test_frag_plot_keeps_json_one_document(gpusched, tmp_path):
    target = tmp_path / "frag.png"
    drawn = gpusched("frag", "monday", "--json", "--output-file", target)
    assert drawn.json() == gpusched("frag", "monday", "--json").json()
    assert drawn.stderr.strip() == f"wrote {target}"
    assert _png(target).shape[2] == 4


def test_frag_plot_with_nothing_free_still_draws(gpusched, write, tmp_path):
    full = write(
        "full.json",
        {
            "nodes": [
                {"name": "a", "gpu": {"model": "L4", "count": 1, "memory_gib": 24, "busy": [{"gpu": 0, "pod": "p"}]}}
            ]
        },
    )
    target = tmp_path / "frag.png"
    assert gpusched("frag", full, "--output-file", target).exit_code == 0
    assert _png(target).shape[0] > 300


# --- map: states -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("placement", ["island", "count"])
def test_map_counts_agree_with_frag(gpusched, size, placement):
    frag = gpusched("frag", "fragmented", "--json").json()
    row = next(r for r in frag["rows"] if r["size"] == size)
    drawn = gpusched("map", "fragmented", "--size", size, "--placement", placement, "--json").json()
    counts = drawn["counts"]
    usable = row["pods_in_island"] if placement == "island" else row["pods_by_count"]
    # stranded: frag's leftovers, less those in an island (node) too small for the size: they never strand
    too_small = 4 if placement == "island" and size > 2 else 0  # pcie-a's four free GPUs, in islands of two
    assert counts["stranded"] == frag["free"] - usable * size - too_small
    assert counts["free"] + counts["stranded"] == frag["free"]
    assert counts["stranded"] == sum(node["stranded"] for node in drawn["nodes"])
    assert counts["mig"] == len(frag["mig"])
    assert counts == {state: sum(1 for g in drawn["gpus"] if g["state"] == state) for state in counts}
    if placement == "count":
        assert counts["stranded"] == row["stranded"]


def test_map_states_match_the_cluster_file(gpusched):
    drawn = {(g["node"], g["index"]): g for g in gpusched("map", "fragmented", "--json").json()["gpus"]}
    assert len(drawn) == 8 + 8 + 8 + 2 + 1
    assert drawn["dgx-a", 0]["state"] == "busy" and drawn["dgx-a", 0]["holders"] == ["train-a"]
    assert [drawn["pcie-a", i]["state"] for i in range(8)] == ["busy", "free"] * 4  # islands of 2: too small for 8
    assert [drawn["pcie-a", i]["island"] for i in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    l4 = drawn["l4-a", 1]
    assert (l4["state"], l4["holders"], l4["replicas"]) == ("time-sliced", ["chat-3"], 4)
    mig = drawn["mig-a", 0]
    assert mig["state"] == "mig" and mig["holders"] == ["chat-0", "chat-1"]
    assert [(i["profile"], i["start"], i["slices"], i["holder"]) for i in mig["instances"]] == [
        ("1g.10gb", 0, 1, "chat-0"), ("1g.10gb", 1, 1, None), ("2g.20gb", 2, 2, None),
        ("1g.10gb", 4, 1, "chat-1"), ("1g.10gb", 5, 1, None), ("1g.10gb", 6, 1, None),
    ]  # fmt: skip


def test_map_text_groups_by_island_even_when_islands_interleave(gpusched, write):
    cluster = write(
        "c.json",
        {
            "nodes": [
                {
                    "name": "kind",
                    "gpu": {
                        "model": "A100-PCIE-80GB",
                        "count": 4,
                        "memory_gib": 80,
                        "islands": [[0, 2], [1, 3]],
                        "busy": [{"gpu": 0, "pod": "p"}],
                    },
                }
            ]
        },
    )
    result = gpusched("map", cluster, "--size", 2)
    assert (
        result.lines[0]
        == "GPUs for 2-GPU pods inside one NVLink island: 2 free, 1 stranded, 1 busy, 0 MIG, 0 time-sliced"
    )
    assert ["kind", "#s", ".."] in result.words  # island {0, 2}: GPU 0 busy, GPU 2 alone; island {1, 3} whole
    by_count = gpusched("map", cluster, "--size", 2, "--placement", "count", "--json").json()
    assert by_count["counts"]["stranded"] == 1  # 3 free on the node: one pair, one left over


def test_map_text_of_fragmented(gpusched):
    result = gpusched("map", "fragmented")
    assert result.exit_code == 0
    assert ["dgx-a", "######ss"] in result.words
    assert ["pcie-a", "#.", "#.", "#.", "#."] in result.words
    two = gpusched("map", "fragmented", "--size", 2)
    assert ["pcie-a", "#s", "#s", "#s", "#s"] in two.words  # an island of two could hold a 2-GPU pod
    assert ["l4-a", "t", "t", "replicas", "used", "1/4", "1/4"] in result.words
    assert ["mig-a", "m", "MIG", "instances", "used", "GPU", "0:", "2/6"] in result.words


# --- map: the picture ----------------------------------------------------------------------------------------------


def test_map_png_shows_stranded_gpus_only_when_there_are_some(gpusched, tmp_path):
    eight, one = tmp_path / "eight.png", tmp_path / "one.png"
    result = gpusched("map", "fragmented", "--output-file", eight)
    assert result.exit_code == 0 and result.lines[-1] == f"wrote {eight}"
    assert gpusched("map", "fragmented", "--size", 1, "--output-file", one).exit_code == 0
    stranded, free = _png(eight), _png(one)
    assert stranded.shape == free.shape and stranded.shape[2] == 4
    legend = _pixels_of(free, COLOURS["stranded"])  # the legend's patch is the only red in the size-1 map
    assert _pixels_of(stranded, COLOURS["stranded"]) > legend + 2000
    assert _pixels_of(free, COLOURS["free"]) > _pixels_of(stranded, COLOURS["free"]) + 2000


def test_map_png_grows_with_the_nodes(gpusched, tmp_path):
    small, large = tmp_path / "small.png", tmp_path / "large.png"
    assert gpusched("map", "fragmented", "--output-file", small).exit_code == 0  # 5 nodes with GPUs
    assert gpusched("map", "tests/data/import", "--output-file", large).exit_code == 0  # 11
    assert _png(large).shape[0] > _png(small).shape[0] + 200


def test_map_json_with_out_stays_one_document(gpusched, tmp_path):
    target = tmp_path / "map.png"
    drawn = gpusched("map", "fragmented", "--json", "--output-file", target)
    assert drawn.json() == gpusched("map", "fragmented", "--json").json()
    assert target.exists()


# --- pool scale: 5, 120 and 2,000 nodes ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    """Generated clusters of 120 and 2,000 nodes, half their GPUs busy (DGX, PCIe pairs, time-sliced L4)."""
    from gpusched.scenarios.synthetic import synthetic_cluster

    folder = tmp_path_factory.mktemp("pools")
    paths = {5: "fragmented"}
    for nodes in (120, 2000):
        path = folder / f"pool{nodes}.json"
        path.write_text(synthetic_cluster(nodes, 7, 0.5).model_dump_json(exclude_defaults=True))
        paths[nodes] = str(path)
    return paths


@pytest.mark.parametrize(("nodes", "most_wide", "most_high"), [(5, 1400, 900), (120, 1300, 900), (2000, 1300, 2600)])
def test_the_map_stays_a_picture_a_screen_shows(gpusched, pools, tmp_path, nodes, most_wide, most_high):
    """Before: at 120 nodes the map was 810x5,060 px, unsorted, and frag's plot a 6,700x500 px strip."""
    drawn, plotted = tmp_path / "map.png", tmp_path / "frag.png"
    assert gpusched("map", pools[nodes], "--output-file", drawn).exit_code == 0
    assert gpusched("frag", pools[nodes], "--output-file", plotted).exit_code == 0
    high, wide = _png(drawn).shape[:2]
    assert 400 <= wide <= most_wide and 300 <= high <= most_high, (wide, high)
    assert _png(plotted).shape[:2] == (500, 1300)


def test_pool_pictures_group_by_kind_sorted_by_free_gpus(gpusched, pools, tmp_path):
    svg = tmp_path / "map.svg"
    assert gpusched("map", pools[2000], "--output-file", svg).exit_code == 0
    text = svg.read_text()
    drawn = gpusched("map", pools[2000], "--json").json()
    kinds = {node["kind"] for node in drawn["nodes"]}
    assert kinds == {"A100-SXM4-80GB x8", "A100-PCIE-80GB x8", "L4 x4 time-sliced x4"}
    for kind in kinds:
        count = sum(1 for node in drawn["nodes"] if node["kind"] == kind)
        assert f"{kind}: {count} nodes" in text
    from gpusched.cli.plots import by_kind
    from gpusched.planner.gpumap import MapNode

    for _, members in by_kind(MapNode(**node) for node in drawn["nodes"]):
        assert [m.free for m in members] == sorted((m.free for m in members), reverse=True)
    histogram = tmp_path / "frag.svg"
    assert gpusched("frag", pools[2000], "--output-file", histogram).exit_code == 0
    assert "2000 nodes by free GPUs, by kind" in histogram.read_text()


def test_busy_cells_name_their_holder(gpusched, tmp_path):
    svg = tmp_path / "map.svg"
    assert gpusched("map", "fragmented", "--output-file", svg).exit_code == 0
    text = svg.read_text()
    assert "train-a" in text and "finetune-b" in text and "chat-2" in text  # a DGX pod, another, a replica's
    assert "A100-SXM4-80GB x8: 2 node(s), most free GPUs first" in text


@pytest.mark.parametrize(("suffix", "magic"), [(".svg", b"<?xml"), (".pdf", b"%PDF"), (".png", b"\x89PNG")])
def test_svg_and_pdf_as_well_as_png(gpusched, tmp_path, suffix, magic):
    for command in ("map", "frag"):
        target = tmp_path / f"{command}{suffix}"
        assert gpusched(command, "fragmented", "--output-file", target).exit_code == 0
        assert target.read_bytes().startswith(magic)


def test_an_empty_pool_of_four_gpu_nodes_strands_nothing_for_eight(gpusched, write, tmp_path):
    """Before: with the default size 8, an empty pool of 4-GPU nodes was `0 free, 8 stranded`, all red."""
    gpu = {"model": "L40S", "count": 4, "memory_gib": 48}
    cluster = write("pool.json", {"nodes": [{"name": "a", "gpu": gpu}, {"name": "b", "gpu": gpu}]})
    text = gpusched("map", cluster)
    assert text.lines[0].startswith("GPUs for 8-GPU pods inside one NVLink island: 8 free, 0 stranded")
    assert "2 node(s) with no island of 8 GPUs (their free GPUs are not stranded)" in text.lines[0]
    target = tmp_path / "pool.png"
    assert gpusched("map", cluster, "--output-file", target).exit_code == 0
    one = tmp_path / "one.png"
    assert gpusched("map", cluster, "--size", 1, "--output-file", one).exit_code == 0
    assert _pixels_of(_png(target), COLOURS["stranded"]) == _pixels_of(_png(one), COLOURS["stranded"])  # legend only
    frag = gpusched("frag", cluster, "--output-file", tmp_path / "frag.svg")
    assert frag.exit_code == 0 and "no node" in (tmp_path / "frag.svg").read_text()  # no 8-GPU bar at all


# --- bad input: exit 2, one message, nothing written ----------------------------------------------------------------


@pytest.mark.parametrize("command", [("frag", "fragmented", "--output-file"), ("map", "fragmented", "--output-file")])
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing/x.png", "does not exist"),
        ("x.jpg", "expected a file name ending in .png, .svg or .pdf"),
        (".", "is a folder"),
    ],
)
def test_bad_picture_paths(gpusched, tmp_path, command, name, message):
    result = gpusched(*command, tmp_path / name)
    assert result.exit_code == 2
    assert result.stdout == "" and message in result.stderr and len(result.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command", [("frag", "no-such-cluster", "--output-file"), ("map", "no-such-cluster", "--output-file")]
)
def test_bad_cluster_writes_no_picture(gpusched, tmp_path, command):
    result = gpusched(*command, tmp_path / "x.png")
    assert result.exit_code == 2 and result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_map_bad_options(gpusched):
    placement = gpusched("map", "fragmented", "--placement", "nvlink")
    assert (
        placement.exit_code == 2
        and "Invalid value for '--placement': 'nvlink' is not one of 'island', 'count'" in placement.stderr
    )
    assert gpusched("map", "fragmented", "--size", 0).exit_code == 2


# --- the console script --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["map", "fragmented"], "GPUs for 8-GPU pods inside one NVLink island:"),
        (["import", "--nodes", "tests/data/import/nodes.json"], "imported 12 nodes"),
    ],
)
def test_console_script_runs_a_module_with_one_command(args, first_line):
    """The script loads only the command's module; one with a single command must still read COMMAND as a name."""
    script = "import sys; from gpusched.cli import main; sys.argv[0] = 'gpusched'; main()"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode != 2, done.stderr  # import exits 1: that dump has facts it cannot model
    assert done.stdout.startswith(first_line)
