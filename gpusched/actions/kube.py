"""The few cluster operations an apply run makes, over gpusched.scenarios.live's one client (its timeouts, its read
limits): the cluster read in one snapshot, pods and nodes, node changes made read-modify-write, evictions through
the Eviction subresource, bindings, deletions and re-creations.

Every failure is a gpusched.errors.ClusterError naming the server and the request: `Refused` when the API server
answered an error status (with the status and its causes, e.g. the PodDisruptionBudget that refused an eviction),
`Unreachable` when no answer came (a lost connection, a timeout), a plain ClusterError when the answer was not a
JSON object. The runner stops the same way on each of them.

Every write can be a server-side dry run (`dryRun=All`): the API server authorises, admits and checks it (a
PodDisruptionBudget for an eviction) and stores nothing. Writes name the field manager `gpusched`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ClusterError, InputError
from ..scenarios.importer import Imported, build_cluster, from_documents
from ..scenarios.importer.live import DRA_PATHS
from ..scenarios.live import Expired, RestError, request, root_cause, split_name

if TYPE_CHECKING:
    from kubernetes import client

    from ..models.cluster import Cluster

__all__ = [
    "CORDON_TAINT", "FIELD_MANAGER", "Kube", "Refused", "Snapshot", "Unreachable", "controller_uid", "pod_key",
]  # fmt: skip

CORDON_TAINT = "gpusched.io/cordon"  # NoSchedule, value: the run that set it; only that run removes it
FIELD_MANAGER = "gpusched"
MERGE = "application/merge-patch+json"
CONFLICT_TRIES = 5  # read-modify-write attempts when someone else changes the node in between (409 Conflict)


class Refused(ClusterError):
    """The API server answered with an error status: `status`, and the causes of its Status details."""

    def __init__(self, server: str, request: str, status: int, message: str, causes: tuple[str, ...] = ()) -> None:
        self.status, self.reason, self.causes = status, message, causes
        super().__init__(server, request, f"{status} {message}")

    def __reduce__(self) -> Any:
        return type(self), (self.server, self.request, self.status, self.reason, self.causes)


class Unreachable(ClusterError):
    """No answer: the connection failed or was lost, or the server took longer than the timeout."""


def controller_uid(pod: dict) -> str | None:
    """The uid of the pod's managing controller (ReplicaSet, Job, StatefulSet, ...), None for a bare pod."""
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return str(owner.get("uid"))
    return None


def pod_key(pod: dict) -> str:
    return f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"


def _pod_path(key: str) -> str:
    namespace, name = split_name(key)
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def _query(dry_run: bool) -> str:
    return f"?fieldManager={FIELD_MANAGER}" + ("&dryRun=All" if dry_run else "")


@dataclass(frozen=True)
class Snapshot:
    """The cluster read once: the raw pods and nodes, and the model the live loader builds from those same
    answers. A plan, its journal and its first check all come from one snapshot, so nothing that happened between
    two reads is counted twice or excused as already there."""

    pods: list[dict]
    nodes: list[dict]
    imported: Imported

    @property
    def cluster(self) -> Cluster:
        return self.imported.cluster

    def node(self, name: str) -> dict | None:
        return next((node for node in self.nodes if node["metadata"]["name"] == name), None)


class Kube:
    def __init__(self, api: client.ApiClient, kubeconfig: str, context: str | None) -> None:
        self.api, self.kubeconfig, self.context = api, kubeconfig, context

    @property
    def server(self) -> str:
        return str(self.api.configuration.host)

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", kind: str | None = None
    ) -> Any:
        """One request (its answer of `kind` when given); every failure a ClusterError naming it."""
        from urllib3.exceptions import HTTPError  # the kubernetes client's transport (the live extra)

        what = f"{method} {path.split('?')[0]}"
        try:
            return request(self.api, method, path, body, content_type, kind)
        except RestError as error:
            raise Refused(self.server, what, error.status, error.message, error.causes) from None
        except HTTPError as error:
            raise Unreachable(self.server, what, f"cannot reach the API server: {root_cause(error)}") from None
        except Expired as error:
            raise Unreachable(
                self.server, what, f"{error}: timed out (set GPUSCHED_API_TIMEOUT to wait longer)"
            ) from None
        except ValueError as error:  # not a JSON object (of the kind asked for), or larger than the input limit
            raise ClusterError(self.server, what, str(error)) from None

    def _get(self, path: str, kind: str, missing_ok: bool = False) -> dict | None:
        try:
            return self.call("GET", path, kind=kind)
        except Refused as error:
            if missing_ok and error.status == 404:
                return None
            raise

    def snapshot(self) -> Snapshot:
        """Nodes, pods and (where the server serves resource.k8s.io/v1) ResourceSlices and ResourceClaims, read
        once, and the cluster model built from them as `import_cluster` builds it."""
        nodes = self._get("/api/v1/nodes", "NodeList") or {}
        pods = self._get("/api/v1/pods", "PodList") or {}
        objects = [
            (path, found) for path, kind in DRA_PATHS if (found := self._get(path, kind, missing_ok=True)) is not None
        ]
        try:
            imported = build_cluster(from_documents(("/api/v1/nodes", nodes), ("/api/v1/pods", pods), objects, {}))
        except InputError as error:  # the answers, not the user's input, are what cannot be read
            raise ClusterError(self.server, "GET /api/v1/nodes, /api/v1/pods", str(error)) from None
        return Snapshot(_items(pods), _items(nodes), imported)

    def pod(self, key: str) -> dict | None:
        """The pod, or None when it is gone."""
        return self._get(_pod_path(key), "Pod", missing_ok=True)

    def node(self, name: str) -> dict | None:
        return self._get(f"/api/v1/nodes/{name}", "Node", missing_ok=True)

    def pods(self) -> list[dict]:
        return _items(self._get("/api/v1/pods", "PodList") or {})

    def update_node(self, name: str, change: Callable[[dict], dict | None], dry_run: bool = False) -> dict | None:
        """Read the node, patch what `change` returns (None: nothing to do) on the version read, again when someone
        else changed it in between (409); the node as patched (None: it is gone)."""
        for attempt in range(CONFLICT_TRIES):
            node = self.node(name)
            if node is None:
                return None
            patch = change(node)
            if patch is None:
                return node
            version = (node.get("metadata") or {}).get("resourceVersion")
            if version:  # the precondition: 409 if someone else changed the node since it was read
                patch = {**patch, "metadata": {**patch.get("metadata", {}), "resourceVersion": version}}
            try:
                return self.call("PATCH", f"/api/v1/nodes/{name}{_query(dry_run)}", patch, MERGE, "Node")
            except Refused as error:
                if error.status != 409 or attempt == CONFLICT_TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def evict(self, key: str, uid: str | None, dry_run: bool = False) -> None:
        """POST an Eviction (policy/v1): the API server deletes the pod only if its budgets allow (else 429)."""
        namespace, name = split_name(key)
        options: dict = {"preconditions": {"uid": uid}} if uid else {}
        if dry_run:  # the deletion the eviction makes must be a dry run too
            options["dryRun"] = ["All"]
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": options,
        }
        self.call("POST", f"{_pod_path(key)}/eviction{_query(dry_run)}", body)

    def bind(self, key: str, uid: str | None, node: str, dry_run: bool = False) -> None:
        """POST a Binding, as a scheduler does: the API server sets spec.nodeName if the pod is still unbound."""
        namespace, name = split_name(key)
        metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self.call("POST", f"{_pod_path(key)}/binding{_query(dry_run)}", body)

    def delete(self, key: str, uid: str | None, dry_run: bool = False) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **({"preconditions": {"uid": uid}} if uid else {})}
        if dry_run:  # a DELETE body's options replace the query's: dryRun=All in the URL alone would delete
            body["dryRun"] = ["All"]
        self.call("DELETE", f"{_pod_path(key)}{_query(dry_run)}", body)

    def create_pod(self, manifest: dict, dry_run: bool = False) -> dict:
        namespace = manifest["metadata"].get("namespace", "default")
        return self.call("POST", f"/api/v1/namespaces/{namespace}/pods{_query(dry_run)}", manifest, kind="Pod")


def _items(listed: dict) -> list[dict]:
    items = listed.get("items") or []
    return [item for item in items if isinstance(item, dict) and isinstance(item.get("metadata"), dict)]
