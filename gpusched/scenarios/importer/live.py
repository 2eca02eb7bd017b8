"""Import from a live cluster: the documents `kubectl get -o json` would print, read through gpusched.scenarios.live."""

from __future__ import annotations

from collections.abc import Sequence

from ..live import call, connect
from .inputs import ImportInputs, from_documents, read_topology_args

__all__ = ["DRA_PATHS", "read_live"]

DRA_PATHS = (  # each collection and the kind of list it answers with
    ("/apis/resource.k8s.io/v1/resourceslices", "ResourceSliceList"),
    ("/apis/resource.k8s.io/v1/resourceclaims", "ResourceClaimList"),
)


def read_live(kubeconfig: str, context: str | None, topology: Sequence[str] = ()) -> ImportInputs:
    """Nodes, Pods, and (where the server serves resource.k8s.io/v1) ResourceSlices and ResourceClaims."""
    api = connect(kubeconfig, context)
    with api:
        server = api.configuration.host  # the sources an error names: this server's answer to that request
        nodes = (f"{server}/api/v1/nodes", call(api, "GET", "/api/v1/nodes", kind="NodeList"))
        pods = (f"{server}/api/v1/pods", call(api, "GET", "/api/v1/pods", kind="PodList"))
        # a server that does not serve resource.k8s.io/v1 answers 404: no DRA objects
        objects = [
            (f"{server}{path}", found)
            for path, kind in DRA_PATHS
            if (found := call(api, "GET", path, missing_ok=True, kind=kind)) is not None
        ]
    return from_documents(nodes, pods, objects, read_topology_args(topology))
