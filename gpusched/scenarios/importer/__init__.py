"""Import: gpusched's cluster model built from what a cluster and its GPUs publish.

Sources, most exact first: NVIDIA DRA driver ResourceSlices and ResourceClaims; device plugin allocatable
(nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*); GPU Feature Discovery and GPU Operator labels;
`nvidia-smi topo -m` and `nvidia-smi -q -x` captured on nodes; the catalogue of known servers and instance types.
"""

from __future__ import annotations

from pathlib import Path

from .build import Imported, build_cluster, pending_pods
from .catalogue import Catalogue, catalogue
from .inputs import (
    DUMP_LAYOUT,
    ImportInputs,
    from_documents,
    read_dump_dir,
    read_inputs,
)
from .nvsmi import SmiLog, SmiTopology, read_capture
from .report import Finding, ImportReport, NodeImport

__all__ = [
    "DUMP_LAYOUT",
    "Catalogue",
    "Finding",
    "ImportInputs",
    "ImportReport",
    "Imported",
    "NodeImport",
    "SmiLog",
    "SmiTopology",
    "build_cluster",
    "catalogue",
    "import_cluster",
    "from_documents",
    "pending_pods",
    "read_capture",
    "read_dump_dir",
    "read_inputs",
]


def import_cluster(source: str, context: str | None = None) -> Imported:
    """The importer's entry: a directory of kubectl dumps, or a kubeconfig (its `context`, else the current one)
    read live, as the cluster model, its Pending GPU pods and the report of what each field came from."""
    if Path(source).is_dir():
        return build_cluster(read_dump_dir(source))
    from .live import read_live  # the kubernetes client loads only for a live cluster

    return build_cluster(read_live(source, context))
