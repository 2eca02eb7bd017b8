"""Every command end to end: output, --json, exit codes, and bad input as exit 2 with one message."""

from __future__ import annotations

import json

import pytest

COMMANDS_TAKING_A_CLUSTER = [
    ("place",),
    ("frag",),
    ("advertised",),
    ("gang",),
    ("allreduce", "x:0"),
]


def test_scenarios_lists_builtins(gpusched):
    result = gpusched("scenarios")
    assert result.exit_code == 0
    names = [words[0] for words in result.words[1:] if words]
    assert {"monday", "fragmented", "training", "weekend"} <= set(names)
    rows = gpusched("scenarios", "--json").json()
    assert next(r for r in rows if r["name"] == "training")["jobs"] == 3


@pytest.mark.parametrize("kind", ["cluster", "pods", "jobs", "claims", "offers"])
def test_schema_is_json_schema(gpusched, kind):
    result = gpusched("schema", kind)
    assert result.exit_code == 0
    schema = result.json()
    assert schema["type"] == "object" and schema["properties"]


def test_schema_unknown_kind(gpusched):
    result = gpusched("schema", "nodes")
    assert (
        result.exit_code == 2
        and "Invalid value for 'KIND': 'nodes' is not one of 'cluster', 'pods', 'jobs', 'claims', 'offers'"
        in result.stderr
    )


def test_advertised_is_the_integer_view(gpusched):
    counts = gpusched("advertised", "monday", "--json").json()
    assert counts["dgx-a"] == {"nvidia.com/gpu": 8}
    assert counts["l4-a"] == {"nvidia.com/gpu": 8}  # 2 GPUs x 4 time-slicing replicas
    assert counts["mig-a"] == {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}
    text = gpusched("advertised", "monday")
    assert ["l4-a", "nvidia.com/gpu", "8"] in text.words


def test_advertised_single_strategy(gpusched, write):
    cluster = {
        "nodes": [
            {
                "name": "m",
                "gpu": {
                    "model": "H100-SXM5-80GB",
                    "count": 2,
                    "memory_gib": 80,
                    "mig_strategy": "single",
                    "mig": [{"gpu": 0, "profile": "3g.40gb", "start": 0}, {"gpu": 0, "profile": "3g.40gb", "start": 4}],
                },
            }
        ]
    }
    counts = gpusched("advertised", write("c.json", cluster), "--json").json()
    assert counts["m"] == {"nvidia.com/gpu": 3}  # two instances plus one whole GPU


def test_place_with_explicit_files(gpusched, write):
    cluster = write("c.json", {"nodes": [{"name": "a", "gpu": {"model": "L4", "count": 1, "memory_gib": 24}}]})
    pods = write("p.json", {"pods": [{"name": "x"}, {"name": "y"}]})
    result = gpusched("place", cluster, "--pods", pods)
    assert result.exit_code == 1
    assert result.lines[0] == "x -> a nvidia.com/gpu GPUs [0] islands [0]"
    assert result.lines[1] == "y Pending 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_place_json_shape(gpusched):
    report = gpusched("place", "monday", "--policy", "spread", "--json").json()
    assert set(report) == {"view", "policy", "gpu_weight", "results", "fragmentation"}
    pending = [r for r in report["results"] if r["node"] is None]
    assert [r["pod"] for r in pending] == ["train-8"]
    assert pending[0]["message"].startswith("0/5 nodes are available:")


def test_place_extra_sizes(gpusched):
    report = gpusched("place", "monday", "--sizes", "3,16", "--json").json()
    assert [row["size"] for row in report["fragmentation"]["rows"]] == [1, 2, 3, 4, 8, 16]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--view", "extended", "--policy", "topology"], "--policy topology needs --view gpu"),
        (["--gpu-weight", "10"], "--gpu-weight scores the scheduler's integers"),
        (
            ["--policy", "fastest"],
            "Invalid value for '--policy': 'fastest' is not one of 'binpack', 'spread', 'topology'",
        ),
        (["--view", "dra"], "Invalid value for '--view': 'dra' is not one of 'gpu', 'extended'"),
        (["--sizes", "2,x"], "--sizes: expected comma-separated whole numbers"),
    ],
)
def test_place_refuses_bad_options(gpusched, args, message):
    result = gpusched("place", "monday", *args)
    assert result.exit_code == 2
    assert message in result.stderr and result.stdout == ""


@pytest.mark.parametrize("command", COMMANDS_TAKING_A_CLUSTER, ids=lambda c: c[0])
def test_bad_cluster_exits_2_naming_file_and_field(gpusched, write, command):
    path = write(
        "bad.json",
        {
            "nodes": [
                {"name": "n", "gpu": {"model": "A100-SXM4-80GB", "count": 2, "memory_gib": 80, "islands": [[0, 5]]}}
            ]
        },
    )
    result = gpusched(command[0], path, *command[1:])
    assert result.exit_code == 2
    assert f"{path}: nodes[0](n).gpu.islands" in result.stderr
    assert "an island names GPU 5" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("command", ["place", "frag", "gang", "advertised"])
def test_unknown_scenario_exits_2(gpusched, command):
    result = gpusched(command, "tuesday")
    assert result.exit_code == 2 and "tuesday: no such file (nor a built-in scenario" in result.stderr


def test_bad_pods_file_exits_2(gpusched, write):
    path = write("pods.yaml", "pods:\n  - {name: a, gpus: -1}\n")
    result = gpusched("place", "monday", "--pods", path)
    assert result.exit_code == 2 and f"{path}: pods[0](a).gpus" in result.stderr


def test_frag_json_and_detail_table(gpusched):
    report = gpusched("frag", "fragmented", "--json").json()
    assert report["free"] == 8 and report["mig"][0]["addable"] == ["1g.10gb", "2g.20gb"]
    text = gpusched("frag", "fragmented")
    assert ["pcie-a", "4", "1", "[1]", "[3]", "[5]", "[7]"] in text.words


def test_allreduce_bad_placement(gpusched):
    result = gpusched("allreduce", "monday", "dgx-a:0-9")
    assert result.exit_code == 2 and "node 'dgx-a' has no GPU 8" in result.stderr
    result = gpusched("allreduce", "monday", "dgx-a")
    assert result.exit_code == 2 and "expected NODE:GPUS" in result.stderr


def test_allreduce_across_nodes_uses_the_network(gpusched):
    result = gpusched("allreduce", "training", "dgx-a:0-3+dgx-b:0-3", "--json").json()
    assert result[0]["link"] == "network" and result[0]["slowest_gbps"] == 25.0


def test_gang_refuses_timeout_in_pod_mode(gpusched):
    result = gpusched("gang", "training", "--mode", "pod", "--timeout", "60")
    assert result.exit_code == 2 and "--timeout applies to --mode gang" in result.stderr


def test_gang_with_jobs_file(gpusched, write):
    jobs = write("jobs.json", {"jobs": [{"name": "big", "pods": 3, "gpus_per_pod": 8, "duration": 10}]})
    result = gpusched("gang", "training", "--jobs", jobs, "--json")
    assert result.exit_code == 1  # 24 GPUs never fit on 16
    assert result.json()["jobs"][0]["never_fits"] is True
    assert json.loads(gpusched("gang", "training", "--jobs", jobs, "--json").stdout)["makespan"] is None


def test_bench_place_runs_and_reports(gpusched):
    result = gpusched("bench", "place", "--nodes", "20", "--pods", "200", "--sizes", "1,2", "--json").json()
    assert result["nodes"] == 20 and result["placed"] + result["pending"] == 200 and result["sizes"] == [1, 2]
    text = gpusched("bench", "place", "--nodes", "5", "--pods", "10")
    assert text.exit_code == 0 and text.lines[0].startswith("place 10 pods (sizes [1]) on 5 nodes")


@pytest.mark.parametrize(
    ("args", "message"), [(["--sizes", "0"], "at least 1"), (["--view", "x"], "Invalid value for '--view'")]
)
def test_bench_place_bad_options(gpusched, args, message):
    result = gpusched("bench", "place", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_allreduce_of_one_gpu_crosses_no_link(gpusched):
    result = gpusched("allreduce", "monday", "dgx-a:0", "--json").json()
    assert result == [
        {"ring": "dgx-a:0", "gpus": 1, "gradient_gb": 14.0, "slowest_gbps": None, "link": None, "seconds": 0.0}
    ]
    assert gpusched("allreduce", "monday", "dgx-a:0").lines == ["dgx-a:0: a single GPU: nothing to all-reduce"]


def test_an_unexpected_exception_is_exit_3_in_one_line(monkeypatch) -> None:
    """A bug inside gpusched is never reported as the user's bad input (2) nor as Pending (1): exit 3, one line."""
    from typer.testing import CliRunner

    from gpusched.cli import app, common
    from gpusched.planner import frag

    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(frag, "fragmentation", broken)
    monkeypatch.setattr("gpusched.cli.core.fragmentation", broken, raising=False)
    result = CliRunner().invoke(app, ["frag", "monday"])
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "internal error (a gpusched bug, not your input): KeyError: 'oops'"
    ), lines
    assert "Traceback" not in result.stderr
    result = CliRunner().invoke(app, ["--debug", "frag", "monday"])
    assert result.exit_code == 3 and "Traceback" in result.stderr
    monkeypatch.setenv("GPUSCHED_DEBUG", "1")
    result = CliRunner().invoke(app, ["frag", "monday"])
    assert result.exit_code == 3 and "Traceback" in result.stderr and not common._debug[0]


def test_the_mig_demand_count_is_bounded() -> None:
    from typer.testing import CliRunner

    from gpusched.cli import app

    result = CliRunner().invoke(app, ["mig", "plan", "fragmented", "--demand", f"3g.40gb={2**63}"])
    assert result.exit_code == 2 and "--demand: 3g.40gb: 9223372036854775808 instances is more than" in result.stderr
