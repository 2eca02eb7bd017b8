"""The kubelet's part, played by the harness: the control plane runs without kubelets, so nothing would ever start a
pod or finish deleting one.

- Start: a bound pod is marked Running with a start time. DefaultPreemption ranks victims by it (more important:
  higher priority, then started earlier); without one the scheduler takes "now" for every pod, and the order of
  equal-priority victims, hence which of them are evicted, would be arbitrary.
- Finish terminating: the scheduler evicts a victim with a plain DELETE, so the API server applies the pod's
  terminationGracePeriodSeconds (30 s by default): the pod gets a deletionTimestamp and stays, Terminating, until
  its kubelet confirms that the containers stopped. The harness confirms at once: DELETE with gracePeriodSeconds=0,
  which the API server honours immediately (a pod whose own grace period is 0 is removed by the scheduler's DELETE).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from .api import Rest, RestError

__all__ = ["EPOCH", "start", "finish_terminating", "evict_until_bound"]

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def start(rest: Rest, namespace: str, name: str, second: int) -> None:
    """Running since EPOCH + `second` seconds: distinct seconds give victims a strict order of importance."""
    stamp = (EPOCH + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"status": {"phase": "Running", "startTime": stamp}}
    rest.call("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", body, "application/merge-patch+json")


def finish_terminating(rest: Rest, namespace: str) -> list[str]:
    """Remove every pod of the namespace that is being deleted gracefully; the names removed."""
    done = []
    for pod in rest.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
        if not pod["metadata"].get("deletionTimestamp"):
            continue
        try:
            rest.delete(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}")
        except RestError as error:
            if error.status != 404:  # already gone: nothing to finish
                raise
        done.append(pod["metadata"]["name"])
    return done


def evict_until_bound(rest: Rest, namespace: str, name: str, timeout: float = 30.0) -> str | None:
    """Finish the victims of a preemption as they appear until the preemptor binds: its node, or None."""
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        finish_terminating(rest, namespace)
        node = rest.get(path)["spec"].get("nodeName")
        if node:
            return node
        time.sleep(0.02)
    return None
