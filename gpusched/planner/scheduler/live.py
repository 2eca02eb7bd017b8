"""`gpusched k8s --kubeconfig`: predict from what the API server has, read through gpusched.scenarios.live.

Kept out of gpusched.scenarios so the input layer never imports the planner (the scheduler reads scenarios).
"""

from __future__ import annotations

from ...scenarios.live import fetch, fetch_budgets_and_namespaces, fetch_version
from ..dra.objects import objects_from
from .predict import K8sPrediction, parse_version, predict, server_release

__all__ = ["predict_live"]


def predict_live(kubeconfig: str, context: str | None, pod: str, version: str | None = None) -> K8sPrediction:
    """The same prediction as from files, errors naming the server's paths; as the server's release unless
    `version` is given."""
    release = parse_version(version) if version else server_release(fetch_version(kubeconfig, context))
    nodes, pods, target, documents = fetch(kubeconfig, context, pod)
    objects = objects_from(documents, pods=False, version=release) if documents is not None else None
    budgets, namespaces = fetch_budgets_and_namespaces(kubeconfig, context)
    return predict(
        nodes,
        pods,
        target,
        release,
        ("/api/v1/nodes", "/api/v1/pods", f"pod {pod}"),
        objects,
        budgets,
        "/apis/policy/v1/poddisruptionbudgets",
        namespaces,
        "/api/v1/namespaces",
    )
