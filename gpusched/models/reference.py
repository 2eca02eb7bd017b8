"""The input format, written from the models themselves: the README's "Input format" section and the template
`gpusched init` writes are both generated here, so neither can drift from what the loader accepts (a test checks
the README against `input_format()`, and that the template loads)."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from .cluster import BusyGpu, Cluster, DisruptionBudget, GpuBlock, MigInstance, Node, NvlinkDomain
from .offers import InstanceType, Offers, PoolLimits, Price
from .scheduling import Taint, Toleration
from .workload import GpuNeeds, Job, Pod

__all__ = ["SECTIONS", "input_format", "template"]

# where each model sits in a file, and what it is; a model named inside another is linked by its path here
SECTIONS: list[tuple[str, type[BaseModel], str]] = [
    ("cluster", Cluster, "a cluster file's top level (or a scenario file's `cluster:`)"),
    ("nodes[]", Node, "one per node"),
    ("nodes[].gpu", GpuBlock, "the node's GPUs (one model per node); absent: a node without GPUs"),
    ("nodes[].gpu.mig[]", MigInstance, "a MIG instance that exists now"),
    ("nodes[].gpu.busy[]", BusyGpu, "a GPU (or a time-sliced replica) a running pod holds"),
    ("nodes[].taints[]", Taint, "as a Node's spec.taints"),
    (
        "running.POD",
        GpuNeeds,
        "what a running pod (a holder named in `busy` or `mig`) needs: preempt and defrag read its priority, "
        "labels and constraints; a holder not listed has priority 0 and none",
    ),
    ("disruption_budgets[]", DisruptionBudget, "a PodDisruptionBudget over the running pods"),
    ("nvlink_domains[]", NvlinkDomain, "a rack-scale NVLink domain"),
    ("pods[]", Pod, "a pending pod: a pods file is `pods: [...]` or a bare list; every field of running.POD too"),
    ("jobs[]", Job, "a pending training job: `jobs: [...]`; every field of running.POD too, for each of its pods"),
    ("tolerations[]", Toleration, "as a Pod's spec.tolerations"),
    ("offers", Offers, "an OFFERS file's top level (`gpusched scale --offers`): the NodePool and what it may launch"),
    ("offers.limits", PoolLimits, "the NodePool's limits"),
    ("offers.instance_types[]", InstanceType, "an instance type the NodePool may launch"),
    ("offers.instance_types[].prices[]", Price, "one offering of the type: capacity type, zone, price"),
]
_PATH = {model: path for path, model, _ in SECTIONS}
_INHERITED = {Pod: GpuNeeds, Job: GpuNeeds}  # fields shown once, under running.POD

# what each command reads; the loader refuses nothing else, and ignores nothing
COMMANDS: list[tuple[str, str]] = [
    ("`frag`, `map`, `advertised`, `slices`", "`nodes` (their `busy` and `mig` for what is held)"),
    (
        "`place`",
        "`nodes`, and the pods to place (the scenario's `pods`, or `--pods`); none: the fragmentation as it is",
    ),
    ("`plan`", "`nodes`, and pending `pods` and/or `jobs` (no `duration`: no clock runs)"),
    ("`gang`", "`nodes` and `jobs` with `duration` (and `arrival`): it runs a virtual clock"),
    ("`explain`", "`nodes` and the pending pod or job (a job's `duration` only for the gang simulation)"),
    (
        "`preempt`",
        "`nodes` with `busy`/`mig` holders, `running` (priorities, labels), `disruption_budgets`, the pod or job",
    ),
    ("`defrag`", "`nodes` with `busy`/`mig` holders, `running`, `disruption_budgets`"),
    ("`mig plan`", "`nodes` with MIG-capable GPUs and their `mig` instances; `--demand`, or pods with `mig_profile`"),
    (
        "`scale up`, `scale down`",
        "`nodes` (with `busy`/`mig` holders, `running`, `disruption_budgets` for `down`), pending `pods` and/or "
        "`jobs` (`up`), and an OFFERS file",
    ),
]


def _type(annotation: Any) -> str:
    """A field's type in a reader's words: text, integer, quantity, `a` | `b`, list of X, map of text to X."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        if args[0] == (str | int | float):
            return "quantity"
        return _type(args[0])
    if origin in (Union, types.UnionType):
        if set(args) == {str, int, float}:
            return "quantity"
        kept = [arg for arg in args if arg is not type(None)]
        return " or ".join(_type(arg) for arg in kept)
    if origin is Literal:
        return " \\| ".join(f"`{value}`" for value in args)
    if origin is list:
        return f"list of {_type(args[0])}"
    if origin is dict:
        return f"map of {_type(args[0])} to {_type(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"`{_PATH[annotation]}`" if annotation in _PATH else annotation.__name__
    return {str: "text", int: "integer", float: "number", bool: "true or false"}.get(annotation, str(annotation))


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "**required**"
    if info.default_factory is not None:
        return "`[]`" if info.default_factory is list else "`{}`"
    if info.default is None:
        return "none"
    value = info.default
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _meaning(info: FieldInfo) -> str:
    described = info.description or ""
    if not described:  # a described type (Quantity) says what it is
        for item in info.metadata:
            described = getattr(item, "description", None) or described
    return described.replace("|", "\\|")


def _fields(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    skipped = _INHERITED.get(model)
    own = skipped.model_fields if skipped else {}
    return [(info.alias or name, info) for name, info in model.model_fields.items() if name not in own]


def input_format() -> str:
    """The input format as Markdown: what each command reads, then one table per part of a file."""
    lines = ["| command | reads |", "|---|---|"]
    lines += [f"| {command} | {reads} |" for command, reads in COMMANDS]
    for path, model, about in SECTIONS:
        lines += ["", f"**`{path}`**: {about}.", "", "| field | type | default | meaning |", "|---|---|---|---|"]
        for name, info in _fields(model):
            lines.append(f"| `{name}` | {_type(info.annotation)} | {_default(info)} | {_meaning(info)} |")
    return "\n".join(lines) + "\n"


# --- the template `gpusched init` writes -------------------------------------------------------------------------

_EXAMPLE: dict[str, Any] = {
    "description": "my cluster: describe it here, then `gpusched frag FILE`, `gpusched explain POD -f FILE`",
    "cluster": {
        "nodes": [
            {
                "name": "dgx-1",
                "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
                "cpu": "128",
                "memory": "1Ti",
                "gpu": {
                    "model": "A100-SXM4-80GB",
                    "count": 8,
                    "memory_gib": 80,
                    "islands": [[0, 1, 2, 3, 4, 5, 6, 7]],
                    "busy": [{"gpu": 0, "pod": "ml/notebook-1", "memory_gib": 20}],
                },
            },
            {
                "name": "infer-1",
                "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "gpu": {
                    "model": "A100-SXM4-80GB",
                    "count": 2,
                    "memory_gib": 80,
                    "mig": [{"gpu": 0, "profile": "3g.40gb", "start": 4, "holder": "serve/embed-0"}],
                },
            },
        ],
        "running": {"ml/notebook-1": {"priority": 10, "labels": {"app": "notebook"}}},
        "disruption_budgets": [{"name": "notebooks", "selector": {"app": "notebook"}, "max_unavailable": 1}],
    },
    "pods": [
        {
            "name": "ml/train-8",
            "gpus": 8,
            "nvlink": True,
            "priority": 100,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        }
    ],
    "jobs": [{"name": "ml/llm", "pods": 2, "gpus_per_pod": 4, "duration": 3600}],
}
_ROOTS: dict[str, type[BaseModel]] = {"cluster": Cluster, "pods": Pod, "jobs": Job}


def _field(model: type[BaseModel] | None, key: str) -> FieldInfo | None:
    if model is None:
        return None
    return next((info for name, info in model.model_fields.items() if (info.alias or name) == key), None)


def _inner(model: type[BaseModel] | None, key: str) -> type[BaseModel] | None:
    """The model a key's value (or each of its items) is: nodes -> Node, gpu -> GpuBlock, running -> a map of
    pod names to GpuNeeds (returned as the map's marker, None)."""
    info = _field(model, key)
    stack = [info.annotation] if info is not None else []
    while stack:
        annotation = stack.pop()
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation
        stack.extend(typing.get_args(annotation))
    return None


def _commented(text: str, root: type[BaseModel] | None) -> list[str]:
    """YAML block lines, each `key:` followed by its field's description: the model of each line is tracked by
    indentation (a map of names, as `running:`, holds the model its values are)."""
    stack: list[tuple[int, type[BaseModel] | None, bool]] = [(-1, root, False)]  # (indent, model, names map)
    lines = []
    for line in text.splitlines():
        body = line.lstrip(" ")
        indent = len(line) - len(body) + (2 if body.startswith("- ") else 0)
        body = body.removeprefix("- ")
        while stack[-1][0] >= indent:
            stack.pop()
        _, model, names_map = stack[-1]
        key, colon, rest = body.partition(":")
        if not colon or key.startswith(("'", '"')) and not key.endswith(("'", '"')):
            lines.append(line)
            continue
        key = key.strip("'\"")
        if names_map:  # `running: {POD: needs}`: the key is a pod's name
            lines.append(line)
            stack.append((indent, model, False))
            continue
        info = _field(model, key)
        described = _meaning(info).replace("\\|", "|") if info is not None else ""
        lines.append(f"{line}  # {described}" if described else line)
        inner = _inner(model, key)
        is_map = info is not None and typing.get_origin(info.annotation) is dict and inner is not None
        stack.append((indent, inner, is_map))
    return lines


def template() -> str:
    """A scenario file to start from: every key commented with what it means (from the models' descriptions)."""
    lines = [
        "# A gpusched scenario: a cluster, and the pods and jobs waiting for it. Edit it, then e.g.",
        "#   gpusched frag FILE; gpusched place FILE; gpusched explain ml/train-8 -f FILE; gpusched plan FILE",
        '# Every field: the README\'s "Input format", or `gpusched schema cluster|pods|jobs`. Names are NAMESPACE/NAME.',
    ]
    for key, value in _EXAMPLE.items():
        dumped = yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=None, width=1000)
        model = _ROOTS.get(key)
        if key in ("pods", "jobs"):
            about = next(text for _, listed, text in SECTIONS if listed is model)
            first, *rest = dumped.splitlines()
            lines.append(f"{first}  # {about}")
            lines += _commented("\n".join(rest), model)
        elif key == "cluster":
            first, *rest = dumped.splitlines()
            lines.append(first)
            lines += _commented("\n".join(rest), Cluster)
        else:
            lines += yaml.safe_dump({key: value}, sort_keys=False, width=1000).splitlines()
    return "\n".join(lines) + "\n"
