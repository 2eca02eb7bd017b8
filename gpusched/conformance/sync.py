"""Wait until the scheduler has seen what a play created, before its first pod is judged.

The scheduler learns of objects through one informer per kind, and each informer delivers its kind in order. So an
object created last, once seen, proves the earlier ones of its kind seen too. Two probes, each a pod retried until
its message shows exactly that:

- nodes: an impossible extended resource on the play's nodes: `0/N nodes are available: N Insufficient ...`;
- DRA: a DeviceClass, a ResourceSlice (one `marker` device for every node) and a ResourceClaim, created after the
  play's own; the claim's selector reads an attribute that only this play's marker device lacks (the `&&` before
  it is false on any other device), so once all three are seen, the allocator stops with a CEL runtime error for
  that claim's selector (anything else: one of them is unseen). 1.37 also names the device, 1.35 does not: the
  probe reads only what both releases say. Then the three are deleted: no class of the play selects their driver.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from ..planner.scheduler.plugins.noderesources import insufficient
from .api import Rest
from .scenarios import IMAGE, SCENARIO_LABEL

__all__ = ["PROBE_RESOURCE", "SYNC_TIMEOUT", "verdict", "await_verdict", "nodes", "dra"]

PROBE_RESOURCE = "gpusched.io/probe"
PROBE_DRIVER = "probe.gpusched.io"
RESOURCE = "/apis/resource.k8s.io/v1"
SYNC_TIMEOUT = 20.0


def _condition(pod: dict) -> dict | None:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition.get("type") == "PodScheduled":
            return condition
    return None


def verdict(pod: dict) -> tuple[str | None, str | None] | None:
    """(node, None) once bound, (None, message) once found unschedulable (or failed), None while undecided."""
    if pod.get("spec", {}).get("nodeName"):
        return pod["spec"]["nodeName"], None
    condition = _condition(pod)
    if (
        condition
        and condition.get("status") == "False"
        and condition.get("reason") in ("Unschedulable", "SchedulerError")
    ):
        return None, condition.get("message", "")
    return None


def await_verdict(
    rest: Rest, path: str, transient: Callable[[str], bool] = lambda _: False, timeout: float = 30.0
) -> tuple[dict, str | None, str | None]:
    """(pod, node, message) at the first verdict whose message is not `transient`."""

    def decided() -> tuple[dict, str | None, str | None] | None:
        pod = rest.get(path)
        found = verdict(pod)
        return None if found is None or (found[1] is not None and transient(found[1])) else (pod, *found)

    return rest.wait(decided, timeout=timeout)


def _probe_until(
    rest: Rest, namespace: str, name: str, pod: Callable[[str], dict], seen: Callable[[str], bool]
) -> None:
    """Create probe pods until one's message satisfies `seen`; each is deleted after its verdict."""
    deadline = time.monotonic() + SYNC_TIMEOUT
    for attempt in itertools.count():
        probe = f"{name}-{attempt}"
        rest.create(f"/api/v1/namespaces/{namespace}/pods", pod(probe))
        _, _, message = await_verdict(rest, f"/api/v1/namespaces/{namespace}/pods/{probe}")
        rest.delete(f"/api/v1/namespaces/{namespace}/pods/{probe}")
        if message and seen(message):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the scheduler never saw what {name} waits for: {message}")


def _pod(name: str, namespace: str, label: str, container: dict, **spec: object) -> dict:
    """Tolerates everything and selects only this play's nodes."""
    body = {"containers": [{"name": "probe", "image": IMAGE, **container}], "tolerations": [{"operator": "Exists"}],
            "nodeSelector": {SCENARIO_LABEL: label}, "terminationGracePeriodSeconds": 0, **spec}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": body}


def nodes(rest: Rest, namespace: str, label: str, count: int) -> None:
    """The scheduler's cache holds exactly this play's `count` nodes."""
    expected = f"0/{count} nodes are available: {count} {insufficient(PROBE_RESOURCE)}."
    container = {"resources": {"limits": {PROBE_RESOURCE: "1"}}}
    _probe_until(
        rest,
        namespace,
        f"{label}-probe",
        lambda name: _pod(name, namespace, label, container),
        lambda message: message.startswith(expected),
    )


def _marker_objects(namespace: str, label: str) -> list[tuple[str, dict]]:
    """(collection, object): the class, the slice with the marker device, and the claim."""
    name = f"{label}-probe"
    attribute = f'device.attributes["{PROBE_DRIVER}"]'
    expression = f'{attribute}.play == "{label}" && {attribute}.missing == 1'
    request = {
        "name": "probe",
        "exactly": {"deviceClassName": name, "selectors": [{"cel": {"expression": expression}}]},
    }
    spec = {"driver": PROBE_DRIVER, "pool": {"name": label, "generation": 1, "resourceSliceCount": 1},
            "allNodes": True, "devices": [{"name": "marker", "attributes": {"play": {"string": label}}}]}  # fmt: skip
    selector = {"cel": {"expression": f'device.driver == "{PROBE_DRIVER}"'}}
    return [
        (f"{RESOURCE}/deviceclasses", {"metadata": {"name": name}, "spec": {"selectors": [selector]}}),
        (f"{RESOURCE}/resourceslices", {"metadata": {"name": name}, "spec": spec}),
        (f"{RESOURCE}/namespaces/{namespace}/resourceclaims",
         {"metadata": {"name": name}, "spec": {"devices": {"requests": [request]}}}),
    ]  # fmt: skip


def dra(rest: Rest, namespace: str, label: str) -> None:
    """The scheduler has seen this play's DeviceClasses, ResourceSlices and ResourceClaims."""
    created = _marker_objects(namespace, label)
    for collection, body in created:
        rest.create(collection, body)
    claim = {"name": "probe", "resourceClaimName": f"{label}-probe"}
    failed = f"claim {namespace}/{label}-probe: selector #0"
    try:
        _probe_until(
            rest,
            namespace,
            f"{label}-draprobe",
            lambda name: _pod(name, namespace, label, {}, resourceClaims=[claim]),
            lambda message: failed in message and "CEL runtime error" in message,
        )
    finally:
        for collection, body in reversed(created):
            rest.delete(f"{collection}/{body['metadata']['name']}")
