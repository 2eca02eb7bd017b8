"""Loading inputs: files (JSON or YAML) and the built-in scenarios, into validated models.

A scenario is one YAML file under `data/` holding a cluster and, optionally, the pods and jobs that go with it.
Every command argument that names a cluster accepts a scenario name, a scenario file, a cluster file, a directory of
kubectl dumps, or a kubeconfig (a live cluster); the last two are imported on the fly by gpusched.scenarios.importer.
"""

from __future__ import annotations

import difflib
import os
import typing
import warnings
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import GpuschedWarning, InputError, LimitError
from ..files import parse as _parse
from ..files import read_document
from ..models.cluster import Cluster
from ..models.workload import JobList, PodList
from .importer import import_cluster
from .importer.catalogue import catalogue
from .kubeconfig import paths_of

__all__ = [
    "Scenario",
    "scenario_names",
    "load_scenario",
    "load_cluster",
    "load_pods",
    "load_jobs",
    "load_pending",
    "read_document",
]

Model = TypeVar("Model", bound=BaseModel)
_DATA = resources.files(__package__) / "data"
NOT_FOUND = "no such file (nor a built-in scenario: see `gpusched scenarios`)"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    cluster: Cluster
    pods: PodList | None = None
    jobs: JobList | None = None


def scenario_names() -> list[str]:
    return sorted(entry.name.removesuffix(".yaml") for entry in _DATA.iterdir() if entry.name.endswith(".yaml"))


def _location(loc: tuple[Any, ...], data: Any) -> str:
    """`nodes[1](dgx-b).gpu.islands`: pydantic's error location, with the names of list items where known."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            if isinstance(data, list) and part < len(data):
                data = data[part]
                if isinstance(data, dict) and isinstance(data.get("name"), str):
                    text += f"({data['name']})"
                continue
        else:
            text += f".{part}" if text else str(part)
        data = data.get(part) if isinstance(data, dict) else None
    return text


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that holds the last key of a location (`nodes[0].gpu.memroy_gib` -> GpuBlock), or None."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        if current is None:
            return None
        fields = {info.alias or name: info for name, info in current.model_fields.items()}
        if isinstance(part, str) and part in fields:
            current = _nested(fields[part].annotation)
        # a list's index, or a map's key (`running: {POD: ...}`): its items are of the model found so far
    return current


def _nested(annotation: Any) -> Any:
    """The model inside list[X], dict[str, X], X | None."""
    stack = [annotation]
    while stack:
        item = stack.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item
        stack.extend(typing.get_args(item))
    return None


def _did_you_mean(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """`unknown field (did you mean memory_gib?)`: the closest of the fields the model has there."""
    holder = _model_at(model, loc)
    known = [info.alias or name for name, info in holder.model_fields.items()] if holder else []
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else (f" (known: {', '.join(known)})" if known else "")
    return f"unknown field{hint}"


def validate(source: str, data: Any, model: type[Model], prefix: str = "") -> Model:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = []
        for item in error.errors(include_url=False):
            field = _location(tuple(item["loc"]), data)
            message = item["msg"].removeprefix("Value error, ")
            if item["type"] == "extra_forbidden":
                message = _did_you_mean(model, tuple(item["loc"]))
            problems.append((prefix + field, message))
        problems.sort(key=lambda problem: not problem[1].startswith("unknown field"))  # a typo first
        field, message = problems[0]
        more = "".join(f"\n  {f}: {m}" for f, m in problems[1:])
        raise InputError(source, message + more, field) from None


def _is_scenario_name(source: str) -> bool:
    return source in scenario_names()


_KUBECONFIG_MAX_BYTES = 1 << 20  # a kubeconfig is small; larger files are not worth parsing twice to find out


def _kubeconfig(source: str) -> tuple[str, str | None] | None:
    """`KUBECONFIG[#CONTEXT]`, when the file is a kubeconfig (`kind: Config`; for a $KUBECONFIG list, when each
    of its files that exists is one): the path or list and the context."""
    path, hashed, context = source.rpartition("#")
    if not (hashed and any(Path(entry).is_file() for entry in paths_of(path))):
        path, context = source, ""
    files = [Path(entry) for entry in paths_of(path) if Path(entry).exists()]
    if not files or (len(files) == 1 and os.pathsep not in path and "clusters" not in _config_keys(files[0])):
        return None
    return (path, context or None) if all(_config_keys(file) for file in files) else None


def _config_keys(file: Path) -> set[str]:
    """The top-level keys of a kubeconfig file (`kind: Config`), or none when it is not one."""
    if not file.is_file() or file.stat().st_size > _KUBECONFIG_MAX_BYTES:
        return set()
    try:
        data = read_document(str(file))
    except InputError:
        return set()
    return {str(key) for key in data} if isinstance(data, dict) and data.get("kind") == "Config" else set()


def _is_imported(source: str) -> bool:
    """A directory of kubectl dumps (gpusched.scenarios.importer.DUMP_LAYOUT), or a kubeconfig: a live cluster.
    A name the system refuses to look up (too long, a NUL byte) is neither; reading it then says why."""
    try:
        return Path(source).is_dir() or _kubeconfig(source) is not None
    except (OSError, ValueError):
        return False


def _imported(source: str) -> Scenario:
    """The cluster a dump directory or a live cluster describes, its Pending GPU pods as the scenario's pods."""
    live = _kubeconfig(source)
    if live is None:
        imported = import_cluster(source)
        return Scenario(Path(source).name, f"kubectl dump {source}", imported.cluster, imported.pending)
    imported = import_cluster(*live)
    return Scenario(live[1] or Path(live[0]).stem, f"live cluster ({source})", imported.cluster, imported.pending)


def load_scenario(source: str) -> Scenario:
    """A built-in scenario by name, a scenario file (top-level `cluster:`), a plain cluster file, a directory of
    kubectl dumps or a kubeconfig (`PATH` or `PATH#CONTEXT`): the cluster imported, its Pending GPU pods as pods."""
    if _is_imported(source):
        return _imported(source)
    if _is_scenario_name(source):
        data = _parse(f"scenario {source}", (_DATA / f"{source}.yaml").read_text(encoding="utf-8"))
        return _scenario(f"scenario {source}", source, data)
    data = read_document(source, NOT_FOUND)
    if isinstance(data, dict) and "cluster" in data:
        return _scenario(source, Path(source).stem, data)
    return Scenario(Path(source).stem, "", _cluster(source, data))


def _cluster(source: str, data: Any, prefix: str = "") -> Cluster:
    if not isinstance(data, dict):
        raise InputError(source, "expected a mapping with a `nodes` list", prefix.rstrip("."))
    cluster = validate(source, data, Cluster, prefix)
    _warn_unknown_models(source, cluster, prefix)
    return cluster


def _warn_unknown_models(source: str, cluster: Cluster, prefix: str) -> None:
    """A GPU model the catalogue does not know is read as written, with a warning naming the known ones: a typo
    (`A100-SXM-80GB`) would otherwise make every pod asking for the real model Pending without a word."""
    known = catalogue()
    unknown: dict[str, list[int]] = {}
    for at, node in enumerate(cluster.nodes):
        if node.gpu is not None and known.gpu(node.gpu.model) is None:
            unknown.setdefault(node.gpu.model, []).append(at)
    for model, nodes in unknown.items():
        first = nodes[0]
        more = f" and {len(nodes) - 1} more node(s)" if len(nodes) > 1 else ""
        names = ", ".join(gpu.model for gpu in known.gpus)
        warnings.warn(
            GpuschedWarning(
                f"{source}: {prefix}nodes[{first}]({cluster.nodes[first].name}).gpu.model{more}: unknown GPU model "
                f"{model!r}, read as written (its memory_gib and islands as given); known: {names}"
            ),
            stacklevel=2,
        )


MAX_REUSE = 16  # scenarios that reuse one another's cluster, one inside the next
_reusing: ContextVar[tuple[str, ...]] = ContextVar("gpusched_reusing", default=())  # the scenarios being read


def _identity(source: str) -> str:
    """One name per file however it is written (`a.yaml`, `./a.yaml`), and `scenario X` for a built-in one."""
    source = source.removeprefix("scenario ")
    try:
        return os.path.realpath(source) if Path(source).is_file() else source
    except (OSError, ValueError):
        return source


def _scenario(source: str, name: str, data: dict[str, Any]) -> Scenario:
    unknown = set(data) - {"description", "cluster", "pods", "jobs"}
    if unknown:
        raise InputError(source, "unknown keys (expected description, cluster, pods, jobs)", ", ".join(sorted(unknown)))
    cluster_data = data["cluster"]
    if isinstance(cluster_data, str):  # a scenario may reuse another scenario's cluster by name
        chain = _reusing.get()
        if _identity(cluster_data) in {_identity(s) for s in (*chain, source)}:
            loop = " -> ".join((*chain, source, cluster_data))
            raise InputError(source, f"the scenarios name each other as their cluster ({loop})", "cluster")
        if len(chain) >= MAX_REUSE:
            raise LimitError(source, f"more than {MAX_REUSE} scenarios reuse one another's cluster", "cluster")
        token = _reusing.set((*chain, source))
        try:
            cluster = load_scenario(cluster_data).cluster
        except InputError as error:
            raise InputError(source, str(error), "cluster") from None
        finally:
            _reusing.reset(token)
    else:
        cluster = _cluster(source, cluster_data, "cluster.")
    pods = validate(source, {"pods": data["pods"]}, PodList) if "pods" in data else None
    jobs = validate(source, {"jobs": data["jobs"]}, JobList) if "jobs" in data else None
    return Scenario(name, str(data.get("description", "")), cluster, pods, jobs)


def load_cluster(source: str) -> Cluster:
    return load_scenario(source).cluster


def _listing(source: str, key: str, model: type[Model]) -> Model:
    """A pods or jobs file: `{key: [...]}` or a bare list; a scenario name (or dump directory) gives its list."""
    if _is_scenario_name(source) or _is_imported(source):
        found = getattr(load_scenario(source), key)
        if found is None:
            raise InputError(f"scenario {source}", f"has no {key}")
        return found
    data = read_document(source, NOT_FOUND)
    if isinstance(data, dict) and "cluster" in data:
        found = getattr(_scenario(source, Path(source).stem, data), key)
        if found is None:
            raise InputError(source, f"has no {key}")
        return found
    if isinstance(data, list):
        data = {key: data}
    if not isinstance(data, dict):
        raise InputError(source, f"expected a mapping with a `{key}` list, or a list")
    return validate(source, data, model)


def load_pods(source: str) -> PodList:
    return _listing(source, "pods", PodList)


def load_jobs(source: str) -> JobList:
    return _listing(source, "jobs", JobList)


def load_pending(source: str | Scenario, pods: str | None = None, jobs: str | None = None) -> tuple[PodList, JobList]:
    """The pending work every command plans for, loaded one way (plan, preempt and explain all read it here).

    `pods`/`jobs` files win when given; else `source`: a scenario (loaded, by name or file, a dump or a kubeconfig)
    gives its own pods and jobs, a file its `pods:` and/or `jobs:`, a bare list its pods (jobs, when they have
    `gpus_per_pod`).
    """
    if pods is not None or jobs is not None:
        return (load_pods(pods) if pods else PodList(pods=[])), (load_jobs(jobs) if jobs else JobList(jobs=[]))
    if isinstance(source, Scenario):
        return source.pods or PodList(pods=[]), source.jobs or JobList(jobs=[])
    if _is_scenario_name(source) or _is_imported(source):
        return load_pending(load_scenario(source))
    data = read_document(source, NOT_FOUND)
    if isinstance(data, dict) and "cluster" in data:
        return load_pending(_scenario(source, Path(source).stem, data))
    if isinstance(data, list):
        if any(isinstance(item, dict) and "gpus_per_pod" in item for item in data):
            return PodList(pods=[]), validate(source, {"jobs": data}, JobList)
        return validate(source, {"pods": data}, PodList), JobList(jobs=[])
    expected = "expected a mapping with `pods` and/or `jobs` lists, a bare list, or a scenario"
    if not isinstance(data, dict) or not data:
        raise InputError(source, expected)
    unknown = ", ".join(sorted(map(str, set(data) - {"pods", "jobs"})))
    if unknown:
        raise InputError(source, f"{expected}; unknown keys {unknown} (expected `pods` and/or `jobs` lists only)")
    pending_pods = validate(source, {"pods": data.get("pods", [])}, PodList)
    return pending_pods, validate(source, {"jobs": data.get("jobs", [])}, JobList)
