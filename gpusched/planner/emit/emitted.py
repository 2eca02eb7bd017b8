"""What every emitted file is: objects to apply, headed by the comment lines that say how to apply them."""

from __future__ import annotations

import yaml
from pydantic import BaseModel

from ...models.cluster import Cluster
from ..state import GPU_RESOURCE, ClusterState, advertised

__all__ = ["Emitted", "gpu_resources"]


class Emitted(BaseModel):
    """Objects to apply and the comment lines that head the file; `text()` is what gets written."""

    comments: list[str]
    documents: list[dict]

    def text(self) -> str:
        """The file: comment lines, then the objects (scalar lists and maps inline, as kubectl users read them)."""
        head = "".join(f"# {line}\n" for line in self.comments)
        return head + yaml.safe_dump_all(self.documents, sort_keys=False, default_flow_style=None, width=1000)


def gpu_resources(cluster: Cluster) -> list[str]:
    """nvidia.com/gpu and every other GPU resource a node advertises (nvidia.com/mig-* under the mixed strategy)."""
    state = ClusterState.from_cluster(cluster)
    found = {name for node in state.nodes for name in advertised(node)}
    return [GPU_RESOURCE, *sorted(found - {GPU_RESOURCE})]
