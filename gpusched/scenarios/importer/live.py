"""Import from a live cluster: the documents `kubectl get -o json` would print, read through gpusched.live."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from urllib3.exceptions import HTTPError

from ...errors import InputError
from ...live import RestError, connect, request
from .inputs import ImportInputs, from_documents, read_topology_args

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = ["DRA_PATHS", "read_live"]

DRA_PATHS = ("/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1/resourceclaims")


def read_live(kubeconfig: str, context: str | None, topology: Sequence[str] = ()) -> ImportInputs:
    """Nodes, Pods, and (where the server serves resource.k8s.io/v1) ResourceSlices and ResourceClaims."""
    api = connect(kubeconfig, context)
    with api:
        nodes = ("/api/v1/nodes", _get(api, "/api/v1/nodes"))
        pods = ("/api/v1/pods", _get(api, "/api/v1/pods"))
        objects = [(path, found) for path in DRA_PATHS if (found := _get(api, path, optional=True)) is not None]
    return from_documents(nodes, pods, objects, read_topology_args(topology))


def _get(api: ApiClient, path: str, optional: bool = False) -> Any:
    """The JSON at `path`; None for a resource the server does not serve when `optional`; else one InputError."""
    server = api.configuration.host
    try:
        return request(api, "GET", path)
    except RestError as error:
        if optional and error.status == 404:
            return None
        raise InputError(server, f"GET {path}: {error}") from None
    except HTTPError as error:
        raise InputError(server, f"cannot reach the API server: {error}") from None
