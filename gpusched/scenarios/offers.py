"""Reading an OFFERS file (`gpusched scale --offers`): each instance type's GPUs completed from the catalogue."""

from __future__ import annotations

from ..errors import InputError
from ..files import read_document
from ..models.cluster import GpuBlock
from ..models.offers import InstanceType, Offers
from . import NOT_FOUND, validate
from .importer.catalogue import Catalogue, catalogue

__all__ = ["load_offers", "resolve"]


def load_offers(source: str) -> Offers:
    """The offers in a file, every instance type with its `gpu`; bad input names the file and the field."""
    data = read_document(source, NOT_FOUND)
    if not isinstance(data, dict):
        raise InputError(source, "expected a mapping with an `instance_types` list")
    offers = validate(source, data, Offers)
    known = catalogue()
    resolved = []
    for at, kind in enumerate(offers.instance_types):
        try:
            resolved.append(resolve(kind, known))
        except ValueError as error:
            raise InputError(source, str(error), f"instance_types[{at}]({kind.name}).gpu") from None
    return offers.model_copy(update={"instance_types": resolved})


def resolve(kind: InstanceType, known: Catalogue) -> InstanceType:
    """The instance type with its GPUs: as given, or the catalogue server's (by `server`, else by instance type)."""
    if kind.gpu is not None:
        return kind
    if kind.server is not None:
        server = next((s for s in known.servers if s.name == kind.server), None)
        if server is None:
            raise ValueError(f"no catalogue server is named {kind.server!r} (known: {_names(known)})")
    else:
        server = next((s for s in known.servers if kind.name in s.instance_types), None)
        if server is None:
            raise ValueError(f"instance type {kind.name} is not in the catalogue: give its gpu, or a server")
    count = server.gpu_count(kind.name)
    spec = known.gpu(server.model)
    if count is None or spec is None:
        raise ValueError(f"catalogue server {server.name} names no one GPU model and count: give gpu")
    if server.nvlink == "unknown" and count > 1:
        raise ValueError(f"the catalogue does not know {server.name}'s NVLink islands: give gpu with its islands")
    islands = [list(range(count))] if server.nvlink == "all" and count > 1 else []
    gpu = GpuBlock(model=spec.model, count=count, memory_gib=spec.memory_gib, islands=islands)
    if server.nvlink_gbps:
        gpu = gpu.model_copy(update={"nvlink_gbps": server.nvlink_gbps})
    return kind.model_copy(update={"gpu": gpu})


def _names(known: Catalogue) -> str:
    return ", ".join(server.name for server in known.servers)
