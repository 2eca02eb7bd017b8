"""Reading what a cluster publishes: kubectl JSON of Nodes and Pods, DRA objects, nvidia-smi captures, or a
directory holding them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ...errors import InputError
from ...files import read_document
from ...models.dra import ResourceClaim, ResourceSlice
from ...models.kube import KubeNode, KubePod, parse_nodes, parse_pods
from .nvsmi import Capture, read_capture

__all__ = ["DUMP_LAYOUT", "ImportInputs", "from_documents", "read_dump_dir", "read_inputs", "read_topology_args"]

DUMP_LAYOUT = (
    "a kubectl dump directory: nodes.json (kubectl get nodes -o json), optionally pods.json (kubectl get pods -A "
    "-o json), other .json/.yaml files with DRA objects (ResourceSlices, ResourceClaims), and topology/NODE.txt "
    "(nvidia-smi topo -m) or topology/NODE.xml (nvidia-smi -q -x)"
)
_MODELS: dict[str, type[BaseModel]] = {"ResourceSlice": ResourceSlice, "ResourceClaim": ResourceClaim}


@dataclass(frozen=True)
class ImportInputs:
    nodes: list[KubeNode]
    pods: list[KubePod] = field(default_factory=list)
    slices: list[ResourceSlice] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    captures: dict[str, list[Capture]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # objects of kinds an import does not read


def read_inputs(
    nodes: str, pods: str | None = None, objects: Sequence[str] = (), topology: Sequence[str] = ()
) -> ImportInputs:
    """The files named on the command line; every problem names its file and field."""
    documents = [(path, read_document(path)) for path in objects]
    captures = read_topology_args(topology)
    return from_documents(
        (nodes, read_document(nodes)), (pods, read_document(pods)) if pods else None, documents, captures
    )


def from_documents(
    nodes: tuple[str, Any],
    pods: tuple[str, Any] | None,
    objects: list[tuple[str, Any]],
    captures: dict[str, list[Capture]],
) -> ImportInputs:
    """Parsed kubectl JSON (or API responses) -> inputs; `(source, document)` pairs so errors name the source."""
    slices: list[ResourceSlice] = []
    claims: list[ResourceClaim] = []
    ignored: list[str] = []
    for source, document in objects:
        for kind, item in _objects(source, document, ignored):
            (slices if kind == "ResourceSlice" else claims).append(item)  # type: ignore[arg-type]
    sources = [nodes[0]] + ([pods[0]] if pods else []) + [source for source, _ in objects]
    sources += [c.source for found in captures.values() for c in found]
    return ImportInputs(
        nodes=parse_nodes(nodes[1], nodes[0]),
        pods=parse_pods(pods[1], pods[0]) if pods else [],
        slices=slices,
        claims=claims,
        captures=captures,
        sources=sources,
        ignored=ignored,
    )


def _objects(source: str, document: Any, ignored: list[str]) -> list[tuple[str, BaseModel]]:
    """ResourceSlices and ResourceClaims from a List (or a single object); other kinds are noted and skipped."""
    if not isinstance(document, dict):
        raise InputError(source, "expected a Kubernetes object or a List of them (kubectl get -o json)")
    kind_of_document = str(document.get("kind") or "")
    listed = kind_of_document.endswith("List")
    items = document.get("items") if listed else [document]
    if not isinstance(items, list):
        raise InputError(source, "expected a list", "items")
    found: list[tuple[str, BaseModel]] = []
    list_kind = kind_of_document.removesuffix("List")  # API list responses leave `kind` out of their items
    for index, item in enumerate(items):
        path = f"items[{index}]" if listed else ""
        kind = (item.get("kind") or list_kind) if isinstance(item, dict) else None
        if kind not in _MODELS:
            ignored.append(f"{source}{': ' + path if path else ''}: {kind or 'an object without a kind'}")
            continue
        try:
            found.append((kind, _MODELS[kind].model_validate({**item, "kind": kind})))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InputError(source, first["msg"], f"{path}.{where}" if where else path) from None
    return found


def read_topology_args(topology: Sequence[str], source: str = "topology") -> dict[str, list[Capture]]:
    """`NODE=FILE` arguments -> the captures per node; a malformed one an InputError naming `source`."""
    captures: dict[str, list[Capture]] = {}
    for entry in topology:
        node, _, path = entry.partition("=")
        if not node or not path:
            raise InputError(source, f"expected NODE=FILE, got {entry!r}")
        captures.setdefault(node, []).append(read_capture(path))
    return captures


def read_dump_dir(directory: str) -> ImportInputs:
    """A kubectl dump directory (see DUMP_LAYOUT)."""
    root = Path(directory)
    nodes = root / "nodes.json"
    if not nodes.is_file():
        raise InputError(directory, f"no nodes.json: expected {DUMP_LAYOUT}")
    pods = root / "pods.json"
    others = sorted(
        p
        for p in root.iterdir()
        if p.is_file() and p.suffix in (".json", ".yaml", ".yml") and p.name not in ("nodes.json", "pods.json")
    )
    topology = root / "topology"
    entries = [f"{p.stem}={p}" for p in sorted(topology.iterdir()) if p.is_file()] if topology.is_dir() else []
    return read_inputs(str(nodes), str(pods) if pods.is_file() else None, [str(p) for p in others], entries)
