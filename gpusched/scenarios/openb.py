"""The Alibaba openb GPU trace (cluster-trace-gpu-v2023): node and pod CSVs, read from wherever the user keeps them.

Where: the folder given (`--data`), else $GPUSCHED_OPENB, else the user cache ($XDG_CACHE_HOME or ~/.cache, then
gpusched/openb), which `openb_download.download_openb` fills from the public trace.

Nodes map onto gpusched's cluster model as they are (cpu, memory, GPU model and count). Pods do not: a pod with
`gpu_milli` < 1000 takes a fraction of one GPU, which time-sliced replicas cannot express, and `gpu_spec` lists
several allowed models. So a pod is kept as an `OpenbPod` (GPU milli per GPU, allowed models) and the GPU-sharing
simulation (gpusched.planner.gpushare) keeps its own state, built from the Cluster.

Column variants accepted (as the trace and the FGD simulator's converter use them): name | job_id, cpu_milli | cpu |
num_cpu (cores), memory_mib (optional), gpu_milli (optional: 1000 when a pod has GPUs), gpu_spec (optional),
creation_time / deletion_time (optional, seconds); nodes: sn | name, cpu_milli | cpu, memory_mib, gpu, model.
"""

from __future__ import annotations

import csv
import io
import math
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import InputError, LimitError
from ..files import read_text
from ..limits import MAX_GPUS_PER_NODE, MAX_NODES, MAX_PODS
from ..models.cluster import Cluster

__all__ = [
    "GPU_MEMORY_GIB",
    "MILLI",
    "NODE_FILE",
    "OPENB_ENV",
    "OPENB_FILES",
    "OPENB_TRACES",
    "OpenbNode",
    "OpenbPod",
    "OpenbTrace",
    "load_openb",
    "load_openb_nodes",
    "load_openb_pods",
    "openb_cluster",
    "openb_dir",
    "trace_files",
    "trace_path",
]

MILLI = 1000  # one GPU
MAX_CPU_MILLI = 10**9  # a million cores on one node or pod: larger is a typo (and would overflow the int64 sums)
MAX_MEMORY_MIB = 10**12  # an exbibyte
OPENB_TRACES = ("default", "cpu050", "gpushare40", "multigpu20", "gpuspec33")
NODE_FILE = "openb_node_list_gpu_node.csv"
OPENB_FILES = (NODE_FILE, *(f"openb_pod_list_{trace}.csv" for trace in OPENB_TRACES))
OPENB_ENV = "GPUSCHED_OPENB"
HOW_TO_GET = (
    "get the openb trace with `gpusched bench openb --download`, "
    f"or point --data or ${OPENB_ENV} at a folder holding it"
)
# GPU memory per model (GiB), from the FGD simulator's table; G1-G3 are Alibaba's undisclosed models.
GPU_MEMORY_GIB = {
    "P4": 7.4,
    "T4": 14.8,
    "V100M16": 15.8,
    "P100": 15.9,
    "A10": 22.2,
    "V100M32": 31.7,
    "A100": 79.3,
    "G1": 9.8,
    "G2": 19.5,
    "G3": 29.3,
    "2080": 10.8,
    "1080": 10.9,
    "M40": 11.2,
    "3090": 23.7,
}
_ALIASES = {
    "name": ("name", "sn", "job_id"),
    "cpu_milli": ("cpu_milli",),
    "cpu_cores": ("cpu", "num_cpu"),
}


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class OpenbNode(_Row):
    """One row of the node list: a machine with `gpu` GPUs of one model (none: a CPU node)."""

    name: str = Field(min_length=1)
    cpu_milli: int = Field(ge=0, le=MAX_CPU_MILLI)
    memory_mib: int = Field(ge=0, le=MAX_MEMORY_MIB)
    gpu: int = Field(ge=0, le=MAX_GPUS_PER_NODE)
    model: str = ""

    @model_validator(mode="after")
    def _model_with_gpus(self) -> OpenbNode:
        if self.gpu and not self.model:
            raise ValueError("a node with GPUs needs a model")
        if self.gpu and self.model not in GPU_MEMORY_GIB:
            raise ValueError(f"unknown GPU model {self.model!r} (known: {', '.join(sorted(GPU_MEMORY_GIB))})")
        return self


class OpenbPod(_Row):
    """One task: CPU and memory, `num_gpu` GPUs of `gpu_milli` each (< 1000: a share of one GPU), allowed models."""

    name: str = Field(min_length=1)
    cpu_milli: int = Field(ge=0, le=MAX_CPU_MILLI)
    memory_mib: int = Field(0, ge=0, le=MAX_MEMORY_MIB)
    num_gpu: int = Field(ge=0, le=MAX_GPUS_PER_NODE)
    gpu_milli: int = Field(ge=0, le=MILLI)
    models: tuple[str, ...] = Field((), description="allowed GPU models (gpu_spec); empty: any")
    creation_time: float | None = None
    deletion_time: float | None = None

    @model_validator(mode="after")
    def _shape(self) -> OpenbPod:
        if self.num_gpu == 0 and self.gpu_milli:
            raise ValueError("gpu_milli must be 0 for a pod without GPUs (num_gpu 0)")
        if self.num_gpu and not self.gpu_milli:
            raise ValueError("a pod with GPUs needs gpu_milli of 1 to 1000")
        if self.num_gpu > 1 and self.gpu_milli != MILLI:
            raise ValueError("only one-GPU pods may share a GPU: a multi-GPU pod needs gpu_milli 1000")
        return self

    @property
    def total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


@dataclass(frozen=True)
class OpenbTrace:
    """A pod list and the node list it runs on, as loaded (the name: default, cpu050, ... or the file's stem)."""

    name: str
    nodes: list[OpenbNode]
    pods: list[OpenbPod]


def openb_dir(data: str | Path | None = None) -> Path:
    """The folder holding the trace: `data` when given, else $GPUSCHED_OPENB, else the user cache."""
    if data:
        return Path(data)
    if os.environ.get(OPENB_ENV):
        return Path(os.environ[OPENB_ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "gpusched" / "openb"


def _is_path(trace: str) -> bool:
    return trace.endswith(".csv") or "/" in trace


def trace_path(trace: str, data_dir: str | Path) -> Path:
    """A shipped trace name (default, cpu050, ...) inside `data_dir`, or a CSV path as given."""
    return Path(trace) if _is_path(trace) else Path(data_dir) / f"openb_pod_list_{trace}.csv"


def trace_files(
    traces: list[str], data: str | Path | None = None, nodes_file: str | Path | None = None
) -> tuple[Path, list[Path]]:
    """The node list and pod lists a benchmark reads (from `openb_dir(data)`); a shipped file missing there is an
    InputError that says how to get the trace."""
    folder = openb_dir(data)
    nodes = Path(nodes_file) if nodes_file else folder / NODE_FILE
    pods = [trace_path(trace, folder) for trace in traces]
    named = [path for trace, path in zip(traces, pods, strict=True) if not _is_path(trace)]
    shipped = ([] if nodes_file else [nodes]) + named
    for path in shipped:
        if not path.exists():
            raise InputError(str(path), f"no such file: {HOW_TO_GET}")
    return nodes, pods


def _regular_file(path: Path) -> None:
    """A trace is read again by every worker (process or Ray node), so it must be a file that reads the same each
    time: a FIFO, a device or a socket is refused before anything waits on it."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except (OSError, ValueError) as error:
        raise InputError(str(path), f"cannot read: {getattr(error, 'strerror', None) or error}") from None
    if stat.S_ISDIR(mode):
        raise InputError(str(path), "is a directory, expected a CSV file")
    if not stat.S_ISREG(mode):
        raise InputError(str(path), "not a regular file (a pipe, device or socket): expected a CSV file")


def _rows(path: Path, required: tuple[tuple[str, ...], ...], limit: int, variable: str) -> list[dict[str, str]]:
    """The rows once the header has one of each group of `required` columns: read within the input size limit
    (gpusched.files), at most `limit` of them."""
    _regular_file(path)
    text = read_text(str(path))
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            raise InputError(str(path), "empty file: expected a CSV header")
        for names in required:
            if not set(names) & set(reader.fieldnames):
                raise InputError(str(path), f"no {' or '.join(names)} column", "header")
        rows: list[dict[str, str]] = []
        for row in reader:
            if len(rows) == limit:
                raise LimitError(str(path), f"more than {limit} rows (set {variable} to raise the limit)")
            rows.append(row)
        return rows
    except csv.Error as error:
        raise InputError(str(path), f"malformed CSV at line {reader.line_num}: {error}") from None


def _pick(row: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = row.get(name)
        if value is not None and value != "":
            return value
    return None


def _number(text: str | None, column: str) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{column}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{column}: expected a finite number, got {text!r}")
    return value


def _cpu_milli(row: dict[str, str]) -> Any:
    milli = _pick(row, _ALIASES["cpu_milli"])
    if milli is not None:
        return milli
    cores = _number(_pick(row, _ALIASES["cpu_cores"]), "cpu")
    if cores is not None and abs(cores) > MAX_CPU_MILLI / 1000:
        raise ValueError(
            f"cpu: {_pick(row, _ALIASES['cpu_cores'])} cores is more than the {MAX_CPU_MILLI // 1000} allowed"
        )
    return None if cores is None else round(cores * 1000)


def _node_fields(row: dict[str, str]) -> dict[str, Any]:
    return {
        "name": _pick(row, _ALIASES["name"]),
        "cpu_milli": _cpu_milli(row),
        "memory_mib": row.get("memory_mib"),
        "gpu": row.get("gpu") or 0,
        "model": "" if (row.get("model") or "").lower() == "nan" else row.get("model") or "",
    }


def _pod_fields(row: dict[str, str]) -> dict[str, Any]:
    gpus = row.get("num_gpu")
    milli = row.get("gpu_milli")
    if not milli:  # the trace's oldest variant: whole GPUs only
        milli = "1000" if gpus not in (None, "", "0") else "0"
    spec = (row.get("gpu_spec") or "").strip()
    return {
        "name": _pick(row, _ALIASES["name"]),
        "cpu_milli": _cpu_milli(row),
        "memory_mib": row.get("memory_mib") or 0,
        "num_gpu": gpus,
        "gpu_milli": milli,
        "models": tuple(sorted({m for m in spec.split("|") if m and m.lower() != "nan"})),
        "creation_time": _number(row.get("creation_time") or None, "creation_time"),
        "deletion_time": _number(row.get("deletion_time") or None, "deletion_time"),
    }


def _label(number: int, row: dict[str, str]) -> str:
    """`line 12 (openb-pod-0010)`: where a bad row is, by line and by name."""
    name = _pick(row, _ALIASES["name"])
    return f"line {number}" + (f" ({name})" if name else "")


def _load(
    path: Path,
    model: type[_Row],
    fields: Callable[[dict[str, str]], dict[str, Any]],
    required: tuple[tuple[str, ...], ...],
    limit: tuple[int, str],
) -> list[Any]:
    """Every row validated; the first bad one is reported with its line number, name and field."""
    found = []
    for number, row in enumerate(_rows(path, required, *limit), start=2):
        label = _label(number, row)
        try:
            found.append(model.model_validate(fields(row)))
        except ValueError as error:
            if not isinstance(error, ValidationError):
                raise InputError(str(path), str(error), label) from None
            item = error.errors(include_url=False)[0]
            where = ".".join(str(part) for part in item["loc"])
            message = item["msg"].removeprefix("Value error, ")
            raise InputError(str(path), message, f"{label}.{where}" if where else label) from None
    if not found:
        raise InputError(str(path), "no rows")
    return found


def load_openb_nodes(path: str | Path) -> list[OpenbNode]:
    required = (_ALIASES["name"], _ALIASES["cpu_milli"] + ("cpu",), ("memory_mib",), ("gpu",))
    return _load(Path(path), OpenbNode, _node_fields, required, (MAX_NODES, "GPUSCHED_MAX_NODES"))


def load_openb_pods(path: str | Path) -> list[OpenbPod]:
    required = (_ALIASES["name"], _ALIASES["cpu_milli"] + _ALIASES["cpu_cores"], ("num_gpu",))
    return _load(Path(path), OpenbPod, _pod_fields, required, (MAX_PODS, "GPUSCHED_MAX_PODS"))


def load_openb(trace: str, data_dir: str | Path, nodes: str | Path | None = None) -> OpenbTrace:
    """A pod list (shipped name or path) and the node list beside it (or the one given)."""
    pod_path = trace_path(trace, data_dir)
    node_path = Path(nodes) if nodes else Path(data_dir) / NODE_FILE
    name = pod_path.stem.removeprefix("openb_pod_list_")
    return OpenbTrace(name, load_openb_nodes(node_path), load_openb_pods(pod_path))


def openb_cluster(nodes: list[OpenbNode]) -> Cluster:
    """The node list as gpusched's cluster: cpu, memory, one GPU block per node (exclusive GPUs, no islands known)."""
    specs = []
    for node in nodes:
        spec: dict[str, Any] = {"name": node.name, "cpu": f"{node.cpu_milli}m", "memory": f"{node.memory_mib}Mi"}
        if node.gpu:
            spec["gpu"] = {"model": node.model, "count": node.gpu, "memory_gib": GPU_MEMORY_GIB[node.model]}
        specs.append(spec)
    return Cluster.model_validate({"nodes": specs})
