"""frag --plot and map: the PNGs are real pictures, the map's states agree with frag and the cluster, bad paths write
nothing."""

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
    assert counts["stranded"] == frag["free"] - usable * size
    assert counts["free"] + counts["stranded"] == frag["free"]
    assert counts["mig"] == len(frag["mig"])
    assert counts == {state: sum(1 for g in drawn["gpus"] if g["state"] == state) for state in counts}
    if placement == "count":
        assert counts["stranded"] == row["stranded"]


def test_map_states_match_the_cluster_file(gpusched):
    drawn = {(g["node"], g["index"]): g for g in gpusched("map", "fragmented", "--json").json()["gpus"]}
    assert len(drawn) == 8 + 8 + 8 + 2 + 1
    assert drawn["dgx-a", 0]["state"] == "busy" and drawn["dgx-a", 0]["holders"] == ["train-a"]
    assert [drawn["pcie-a", i]["state"] for i in range(8)] == ["busy", "stranded"] * 4
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
    assert ["pcie-a", "#s", "#s", "#s", "#s"] in result.words
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
    assert _pixels_of(stranded, COLOURS["free"]) == legend  # and its green patch the only green in the size-8 one
    assert _pixels_of(free, COLOURS["free"]) > legend + 2000


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


# --- bad input: exit 2, one message, nothing written ----------------------------------------------------------------


@pytest.mark.parametrize("command", [("frag", "fragmented", "--output-file"), ("map", "fragmented", "--output-file")])
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing/x.png", "does not exist"),
        ("x.jpg", "expected a file name ending in .png"),
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
