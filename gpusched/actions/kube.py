"""The few cluster operations an apply run makes, over gpusched.scenarios.live's one client (its timeouts, its
RestError): read pods and nodes, cordon, label, evict through the Eviction subresource, bind, delete; and the
cluster as the live loader reads it (`imported`), which the plans were made from.

Every write can be a server-side dry run (`dryRun=All`): the API server authorises, admits and checks it (a
PodDisruptionBudget for an eviction) and stores nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..scenarios.importer import Imported, import_cluster
from ..scenarios.live import Expired, RestError, request, root_cause, split_name

if TYPE_CHECKING:
    from kubernetes import client

__all__ = ["CORDON_ANNOTATION", "Kube", "Unreachable", "controller_uid"]

CORDON_ANNOTATION = "gpusched.io/cordoned-by"  # the run that cordoned the node: only that run uncordons it
MERGE = "application/merge-patch+json"


def controller_uid(pod: dict) -> str | None:
    """The uid of the pod's managing controller (ReplicaSet, Job, StatefulSet, ...), None for a bare pod."""
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return str(owner.get("uid"))
    return None


def _pod_path(key: str) -> str:
    namespace, name = split_name(key)
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def _dry(dry_run: bool) -> str:
    return "?dryRun=All" if dry_run else ""


class Unreachable(InputError):
    """The API server did not answer (a lost connection, a timeout): before a run, bad input (exit 2); during
    one, the step fails and the journal says where to resume."""


class Kube:
    def __init__(self, api: client.ApiClient, kubeconfig: str, context: str | None) -> None:
        self.api, self.kubeconfig, self.context = api, kubeconfig, context

    def imported(self) -> Imported:
        """The cluster, and its Pending GPU pods, as the live loader reads it now: the loader `preempt`, `defrag`,
        `mig plan` and `plan` plan from."""
        return import_cluster(self.kubeconfig, self.context)

    @property
    def server(self) -> str:
        return str(self.api.configuration.host)

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        from urllib3.exceptions import HTTPError  # the kubernetes client's transport (the live extra)

        try:
            return request(self.api, method, path, body, content_type)
        except HTTPError as error:
            raise Unreachable(self.server, f"cannot reach the API server: {root_cause(error)}") from None
        except Expired as error:  # a server too slow is a lost connection too: the step can be resumed
            raise Unreachable(self.server, f"{error}: timed out (set GPUSCHED_API_TIMEOUT to wait longer)") from None

    def pod(self, key: str) -> dict | None:
        """The pod, or None when it is gone."""
        try:
            return self.call("GET", _pod_path(key))
        except RestError as error:
            if error.status == 404:
                return None
            raise

    def node(self, name: str) -> dict | None:
        try:
            return self.call("GET", f"/api/v1/nodes/{name}")
        except RestError as error:
            if error.status == 404:
                return None
            raise

    def pods(self) -> list[dict]:
        return list(self.call("GET", "/api/v1/pods").get("items") or [])

    def patch_node(self, name: str, patch: dict, dry_run: bool = False) -> dict:
        return self.call("PATCH", f"/api/v1/nodes/{name}{_dry(dry_run)}", patch, MERGE)

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
        self.call("POST", f"{_pod_path(key)}/eviction{_dry(dry_run)}", body)

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
        self.call("POST", f"{_pod_path(key)}/binding{_dry(dry_run)}", body)

    def delete(self, key: str, uid: str | None, dry_run: bool = False) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **({"preconditions": {"uid": uid}} if uid else {})}
        if dry_run:  # a DELETE body's options replace the query's: dryRun=All in the URL alone would delete
            body["dryRun"] = ["All"]
        self.call("DELETE", f"{_pod_path(key)}{_dry(dry_run)}", body)
