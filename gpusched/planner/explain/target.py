"""Which pending pod or job a command is about: explain and preempt look a name up the same way."""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import InputError
from ...models.cluster import Cluster
from ...models.workload import Job, Pod
from ...scenarios import scenario_names

__all__ = ["pick_pending", "pod_named", "running_node"]


def pod_named(name: str, namespace: str | None, known: Iterable[str]) -> str:
    """The name a pod or job goes by in the cluster, given its NAME and a namespace (kubectl's `-n`): `NS/NAME`,
    or a bare NAME when the namespace is `default` and the files name it so (a scenario names pods without one)."""
    if namespace is None or "/" in name:
        return name
    names = set(known)
    if namespace == "default" and name in names and f"default/{name}" not in names:
        return name
    return f"{namespace}/{name}"


def pick_pending(pods: list[Pod], jobs: list[Job], name: str, source: str) -> Pod | Job:
    """The pod or job called `name` among those of `source`; an InputError when there is none, or both."""
    where = f"scenario {source}" if source in scenario_names() else source
    candidates: list[Pod | Job] = [*pods, *jobs]
    found = [item for item in candidates if item.name == name]
    if len(found) > 1:
        raise InputError(where, f"both a pod and a job are named {name!r}")
    if not found:
        listed = "; ".join(
            f"{what}: {', '.join(i.name for i in items)}" for what, items in (("pods", pods), ("jobs", jobs)) if items
        )
        raise InputError(
            where, f"no pod or job named {name!r}" + (f" ({listed})" if listed else " (it has no pods or jobs)")
        )
    return found[0]


def running_node(cluster: Cluster, pods: list[Pod], jobs: list[Job], name: str) -> str | None:
    """The node a running pod called `name` is on, unless a pending pod or job has that name (it is the target)."""
    if any(item.name == name for item in pods) or any(item.name == name for item in jobs):
        return None
    return {pod.name: pod.node for pod in cluster.running_pods()}.get(name)
