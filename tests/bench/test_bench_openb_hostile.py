"""`bench openb` on hostile or unlucky input, from small generated CSVs (no trace needed): every refusal is one
`error:` line and exit 2 with nothing written, and a bracket that cannot be completed or a variant a trace cannot
give costs only itself, never the finished runs beside it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from gpusched.bench import bracket as bracket_module
from gpusched.bench import openb_bench

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"n-{i},{32000 + 8000 * (i % 3)},262144,{(2, 4, 8)[i % 3]},{('T4', 'V100M16', 'G2')[i % 3]}\n" for i in range(9)
)
GPU_PODS = "".join(
    f"p-{i},{1000 + 500 * (i % 6)},2048,{1 if i % 4 else 2},{(200 + 150 * (i % 5)) if i % 4 else 1000}\n"
    for i in range(60)
)
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
CPU_PODS = "".join(f"c-{i},4000,4096,0,0\n" for i in range(10))


@pytest.fixture
def trace(tmp_path: Path) -> tuple[Path, Path]:
    """A 9-node cluster and a pod list with GPU-sharing, whole-GPU and CPU-only pods."""
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(HEADER + GPU_PODS + CPU_PODS)
    return nodes, pods


def _bench(gpusched, nodes: Path, pods: Path | str, *extra: object):
    return gpusched("bench", "openb", "--trace", pods, "--nodes-file", nodes, "--workers", 1, *extra)


def _refused(result, *words: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_a_bound_that_fails_on_one_seed_costs_only_that_bound(gpusched, trace, tmp_path, monkeypatch):
    """No LP solver gets seed 43's bracket to an optimum: every run is still printed, in the JSON and written to
    --out; the failed bracket says why, the command warns and exits 0."""
    normal = bracket_module.bracket

    def unlucky(spec):
        if spec.seed != 43:
            return normal(spec)
        with monkeypatch.context() as patch:
            patch.setattr(bracket_module, "LP_SOLVERS", (("GLOP", "max_number_of_iterations: 1", "GLOP stopped"),))
            return normal(spec)

    monkeypatch.setattr(openb_bench, "bracket", unlucky)
    nodes, pods = trace
    out = tmp_path / "out"
    result = _bench(
        gpusched, nodes, pods, "--seeds", "42-44", "--policies", "binpack,FGD", "--json", "--output-dir", out
    )
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert sorted((r["policy"], r["seed"]) for r in data["runs"]) == [
        (p, s) for p in ("FGD", "binpack") for s in (42, 43, 44)
    ]
    brackets = {b["seed"]: b for b in data["brackets"]}
    assert brackets[43]["upper_pct"] is None
    assert brackets[43]["failed"] == "upper bound: no LP solver reached an optimum: GLOP stopped FEASIBLE"
    assert brackets[42]["failed"] is None and brackets[44]["failed"] is None
    summary = data["traces"][0]
    assert summary["bound_failures"] == ["seed 43: upper bound: no LP solver reached an optimum: GLOP stopped FEASIBLE"]
    assert summary["upper_pct"] == pytest.approx((brackets[42]["upper_pct"] + brackets[44]["upper_pct"]) / 2, abs=1e-4)
    fgd = next(p for p in summary["policies"] if p["policy"] == "FGD")
    mine = {r["seed"]: r["allocation_pct"] for r in data["runs"] if r["policy"] == "FGD"}
    distance = ((brackets[42]["upper_pct"] - mine[42]) + (brackets[44]["upper_pct"] - mine[44])) / 2
    assert fgd["to_upper_pp"] == pytest.approx(distance, abs=1e-4)  # over the seeds with a bound
    assert "warning: pods: offline bracket seed 43: upper bound: no LP solver" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["openb.csv", "openb.json", "openb.png"]
    assert len((out / "openb.csv").read_text().splitlines()) == 7
    text = _bench(gpusched, nodes, pods, "--seeds", "42-44", "--policies", "binpack,FGD", "--no-timing")
    assert text.exit_code == 0 and "gap" in text.stdout  # the table and the bracket of the other seeds


def test_a_variant_a_trace_cannot_give_is_skipped_and_the_rest_run(gpusched, trace, tmp_path):
    """A trace without CPU-only pods cannot give cpu-heavy: that pair is reported and skipped; the other trace and
    the variants it can give still run. When nothing can run, it is an error."""
    nodes, pods = trace
    gpu_only = tmp_path / "gpu-only.csv"
    gpu_only.write_text(HEADER + GPU_PODS)
    result = _bench(
        gpusched, nodes, f"{pods},{gpu_only}", "--seeds", "42", "--policies", "binpack", "--no-bound",
        "--variant", "none,cpu-heavy:0.3", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert [t["trace"] for t in data["traces"]] == ["pods", "pods+cpu-heavy:0.3", "gpu-only"]
    assert data["skipped"] == [
        {"trace": str(gpu_only), "variant": "cpu-heavy:0.3", "reason": "the trace has no CPU-only pod to copy"}
    ]
    assert result.stderr == (
        f"warning: {gpu_only}: skipped variant cpu-heavy:0.3: the trace has no CPU-only pod to copy\n"
    )
    nothing = _bench(gpusched, nodes, gpu_only, "--seeds", "42", "--no-bound", "--variant", "cpu-heavy:0.3")
    _refused(nothing, "no trace can give any of the variants asked for", "no CPU-only pod to copy")


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("p-x,inf,100,1,500", ["line 2 (p-x)", "cpu_milli", "valid integer"]),
        ("p-x,1e999,100,1,500", ["line 2 (p-x)", "cpu_milli"]),
        ("p-x,99999999999999999999999,100,1,500", ["line 2 (p-x)", "cpu_milli", "less than or equal to 1000000000"]),
        ("p-x,1000,99999999999999999999,1,500", ["memory_mib", "less than or equal"]),
        ("p-x,1000,100,100000,1000", ["num_gpu", "less than or equal to 64"]),
        ("p-x,1000,100,1,-5", ["gpu_milli"]),
    ],
)
def test_a_number_out_of_range_names_the_line_and_field(gpusched, trace, tmp_path, row, words):
    nodes, _ = trace
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + row + "\n" + GPU_PODS)
    _refused(_bench(gpusched, nodes, bad, "--seeds", "42"), str(bad), *words)


@pytest.mark.parametrize("cores", ["inf", "-inf", "nan", "1e308", "1e400"])
def test_cpu_in_cores_must_be_finite_and_bounded(gpusched, trace, tmp_path, cores):
    """`cpu` (cores) as the simulator's converter writes it: inf was an OverflowError, nan a ValueError."""
    nodes, _ = trace
    bad = tmp_path / "cores.csv"
    bad.write_text(f"name,cpu,num_gpu,gpu_milli\np-0,{cores},1,500\np-1,2,1,500\n")
    _refused(_bench(gpusched, nodes, bad, "--seeds", "42"), str(bad), "line 2 (p-0)", "cpu")


def test_a_node_list_with_too_many_gpus_per_node_is_refused(gpusched, trace, tmp_path):
    _, pods = trace
    nodes = tmp_path / "nodes-big.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,1000,1000000000,G2\n")
    _refused(_bench(gpusched, nodes, pods, "--seeds", "42"), str(nodes), "gpu", "less than or equal to 64")


def test_dev_zero_is_refused_at_the_size_limit(gpusched, trace, monkeypatch):
    monkeypatch.setenv("GPUSCHED_MAX_INPUT_BYTES", str(1 << 20))
    nodes, _ = trace
    _refused(_bench(gpusched, nodes, "/dev/zero", "--seeds", "42"), "/dev/zero", "not a regular file")


def test_a_large_file_is_refused_at_the_size_limit(gpusched, trace, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSCHED_MAX_INPUT_BYTES", "4096")
    nodes, _ = trace
    big = tmp_path / "big.csv"
    big.write_text(HEADER + GPU_PODS * 10)
    _refused(_bench(gpusched, nodes, big, "--seeds", "42"), str(big), "larger than the input limit of 4096 bytes")


def test_too_many_rows_is_a_limit_error(gpusched, trace, tmp_path, monkeypatch):
    from gpusched.scenarios import openb

    monkeypatch.setattr(openb, "MAX_PODS", 50)
    nodes, pods = trace
    _refused(_bench(gpusched, nodes, pods, "--seeds", "42"), str(pods), "more than 50 rows", "GPUSCHED_MAX_PODS")


def test_a_fifo_is_refused_without_waiting(gpusched, trace, tmp_path):
    """A FIFO whose writer holds it open and never writes: refused at once (every worker would read it again)."""
    nodes, _ = trace
    fifo = tmp_path / "pods.fifo"
    os.mkfifo(fifo)
    holder = threading.Thread(target=lambda: open(fifo, "wb").close(), daemon=True)  # noqa: SIM115 - held open
    holder.start()
    began = time.monotonic()
    result = _bench(gpusched, nodes, fifo, "--seeds", "42")
    assert time.monotonic() - began < 5
    _refused(result, str(fifo), "not a regular file (a pipe, device or socket)")
    with open(fifo, "rb"):  # let the holder finish
        pass
    holder.join()


def test_a_directory_as_the_trace_is_refused(gpusched, trace, tmp_path):
    nodes, _ = trace
    _refused(_bench(gpusched, nodes, tmp_path, "--seeds", "42"), str(tmp_path), "is a directory")


@pytest.mark.parametrize(
    ("seeds", "words"),
    [
        ("1-1000000000", ["--seeds", "1000000000 asked for, at most 20000", "GPUSCHED_MAX_BENCH_RUNS"]),
        ("1-15000,20000-29999", ["--seeds", "25000 asked for"]),
        ("42-99999999999999999999", ["--seeds", "past the largest seed"]),
        ("9-1", ["--seeds", "runs backwards"]),
        ("x", ["--seeds", "expected numbers"]),
        ("", ["--seeds", "at least one seed"]),
    ],
)
def test_a_seed_list_past_the_limits_is_refused_at_once(gpusched, trace, seeds, words):
    nodes, pods = trace
    began = time.monotonic()
    result = _bench(gpusched, nodes, pods, "--seeds", seeds)
    assert time.monotonic() - began < 5
    _refused(result, *words)


def test_too_many_runs_in_all_are_refused_before_any_starts(gpusched, trace):
    nodes, pods = trace
    result = _bench(gpusched, nodes, pods, "--seeds", "1-5000", "--policies", "all")
    _refused(result, "runs (traces × variants × policies and bracket × seeds)", "55000 asked for, at most 20000")


def test_arrivals_past_the_pod_limit_are_refused(gpusched, trace, tmp_path):
    """Pods of 1 GPU milli at 100 × the capacity would be about 4 million decisions per run."""
    nodes, _ = trace
    tiny = tmp_path / "tiny.csv"
    tiny.write_text(HEADER + "".join(f"t-{i},10,10,1,1\n" for i in range(20)))
    result = _bench(gpusched, nodes, tiny, "--seeds", "42", "--ratio", "100")
    _refused(result, "tiny", "pods would arrive", "more than 1000000", "GPUSCHED_MAX_PODS")


@pytest.mark.parametrize("option", ["--trace", "--policies", "--seeds"])
def test_an_empty_list_is_refused(gpusched, trace, option):
    nodes, pods = trace
    args = {"--trace": pods, "--policies": "binpack", "--seeds": "42"}
    args[option] = ""
    result = gpusched("bench", "openb", "--nodes-file", nodes, "--workers", 1, *[x for kv in args.items() for x in kv])
    _refused(result, option)


def test_a_bad_policy_argument_is_refused_before_any_run(gpusched, trace):
    nodes, pods = trace
    result = _bench(gpusched, nodes, pods, "--seeds", "42", "--policies", "FGD,gpusched:strand=-1")
    _refused(result, "--policies", "policy gpusched: strand: Input should be greater than or equal to 0")


def test_runs_are_named_by_the_policy_and_its_arguments(gpusched, trace):
    nodes, pods = trace
    result = _bench(gpusched, nodes, pods, "--seeds", "42", "--policies", "gpusched,gpusched:strand=0", "--json")
    assert result.exit_code == 0, result.stderr
    assert [p["policy"] for p in result.json()["traces"][0]["policies"]] == ["gpusched", "gpusched:strand=0"]
