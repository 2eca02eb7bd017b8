"""`gpusched k8s --queue`: a backlog replayed as kube-scheduler takes it, one pod after the other.

The pending pods of the pods file (unbound, not terminal, not terminating) leave activeQ in PrioritySort's order:
higher spec.priority first, then the earlier creation (metadata.creationTimestamp, the time the pod was queued),
then namespace/name. Each is predicted against the cluster as the pods before it left it: bound where the scheduler
picks (a tie is a set of equally likely nodes; the replay goes on with the first by name and says so), or left
pending with its FailedScheduling message. A pod the scheduler never tries (another schedulerName, scheduling
gates, a missing claim) stays where it is. Preemption is not replayed: a pod that would nominate a node stays
pending, its nomination reported.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, Field

from ...errors import InputError
from ...models.goparse import parse_rfc3339
from .framework import Version
from .predict import K8sPrediction, predict
from .profile import Profile

__all__ = ["QueueStep", "QueueReplay", "replay"]

_TERMINAL = ("Succeeded", "Failed")


class QueueStep(BaseModel):
    pod: str = Field(description="namespace/name")
    priority: int
    node: str | None = Field(None, description="where it binds; None: it stays pending")
    tied: list[str] = Field(default_factory=list, description="the equally likely nodes when the top is a tie")
    message: str | None = Field(None, description="the PodScheduled=False message when it stays pending")
    nominated: str | None = Field(None, description="the node preemption would nominate (not replayed)")
    never_tried: str | None = Field(None, description="why the scheduler never tries it")


class QueueReplay(BaseModel):
    version: str
    steps: list[QueueStep]

    @property
    def all_bound(self) -> bool:
        return all(step.node for step in self.steps)


def _items(doc: Any, source: str) -> list[dict]:
    if not isinstance(doc, dict) or not isinstance(doc.get("items", []), list):
        raise InputError(source, "expected a PodList or a List of Pods (kubectl get pods -A -o json)", "items")
    return [item for item in doc.get("items", []) if isinstance(item, dict)]


def _pending(item: dict) -> bool:
    spec, status, meta = item.get("spec") or {}, item.get("status") or {}, item.get("metadata") or {}
    return not spec.get("nodeName") and status.get("phase") not in _TERMINAL and not meta.get("deletionTimestamp")


def _order(item: dict, index: int, source: str) -> tuple[int, Any, str]:
    meta = item.get("metadata") or {}
    priority = (item.get("spec") or {}).get("priority") or 0
    created = meta.get("creationTimestamp")
    when = parse_rfc3339(created) if isinstance(created, str) else None
    if created is not None and when is None:
        raise InputError(
            source, f"expected an RFC 3339 time, got {created!r}", f"items[{index}].metadata.creationTimestamp"
        )
    key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    return -int(priority), (when is None, when.timestamp() if when else 0.0), key


def replay(
    nodes_doc: Any,
    pods_doc: Any,
    version: Version,
    sources: tuple[str, str] = ("nodes", "pods"),
    profiles: list[Profile] | None = None,
    **context: Any,
) -> QueueReplay:
    """`context`: the other documents predict() reads (objects, pdbs_doc, namespaces_doc, pvcs_doc)."""
    items = _items(pods_doc, sources[1])
    waiting = sorted((i for i, item in enumerate(items) if _pending(item)),
                     key=lambda i: _order(items[i], i, sources[1]))  # fmt: skip
    current = [copy.deepcopy(item) for item in items]
    steps = []
    for index in waiting:
        others = {"kind": "List", "items": [item for i, item in enumerate(current) if i != index]}
        result = predict(nodes_doc, others, current[index], version, (sources[0], sources[1], sources[1]),
                         profiles=profiles, **context)  # fmt: skip
        step = _step(result)
        if step.node:
            bound = current[index]
            bound.setdefault("spec", {})["nodeName"] = step.node
            bound.setdefault("status", {})["phase"] = "Running"
        steps.append(step)
    return QueueReplay(version=".".join(map(str, version)), steps=steps)


def _step(result: K8sPrediction) -> QueueStep:
    step = QueueStep(pod=result.pod, priority=result.priority, never_tried=result.never_tried or (
        result.pre_enqueue.reason if result.pre_enqueue else None))  # fmt: skip
    if result.scores is not None and result.scores.top:
        top = sorted(result.scores.top)
        step.node, step.tied = top[0], top if len(top) > 1 else []
    elif not step.never_tried:
        step.message = result.message
        step.nominated = result.nomination.node if result.nomination else None
    return step
