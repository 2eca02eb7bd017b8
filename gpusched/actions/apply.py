"""Publish generated objects (ResourceSlices, DeviceClasses) to a live API server with server-side apply.

Every object is first applied with dryRun=All, so the server checks all of them (schema, admission, RBAC,
conflicts with other field managers) before anything is written; only `write=True` then applies them for real.
What changes is the object the server would store compared with the one it has: create, update (the fields that
differ) or unchanged. A failure of any kind is one InputError naming the server or the kubeconfig: exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..scenarios.live import call, connect

if TYPE_CHECKING:
    from kubernetes import client

__all__ = ["FIELD_MANAGER", "ApplyReport", "AppliedChange", "apply_objects"]

FIELD_MANAGER = "gpusched"
APPLY = "application/apply-patch+yaml"  # a JSON body is YAML too
COLLECTIONS = {"ResourceSlice": "resourceslices", "DeviceClass": "deviceclasses"}
VOLATILE = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")  # set by the server


class AppliedChange(BaseModel):
    kind: str
    name: str
    action: Literal["create", "update", "unchanged"]
    changed: list[str] = Field(default_factory=list, description="fields that differ (update), as dotted paths")


class ApplyReport(BaseModel):
    server: str
    field_manager: str = FIELD_MANAGER
    dry_run: bool = Field(description="true: the server checked everything and stored nothing")
    changes: list[AppliedChange]


def _path(obj: dict) -> str:
    """The REST path of a cluster-scoped object: /apis/GROUP/VERSION/COLLECTION/NAME."""
    return f"/apis/{obj['apiVersion']}/{COLLECTIONS[obj['kind']]}/{obj['metadata']['name']}"


def _stable(obj: dict) -> dict:
    """The object without the metadata the server sets on every write."""
    metadata = {key: value for key, value in obj.get("metadata", {}).items() if key not in VOLATILE}
    return {**obj, "metadata": metadata}


def _differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths where two objects differ; lists compare whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new))
        return [
            found for key in keys for found in _differences(old.get(key), new.get(key), f"{path}.{key}".lstrip("."))
        ]
    return [] if old == new else [path]


def _apply(api: client.ApiClient, obj: dict, dry_run: bool) -> AppliedChange:
    """Server-side apply one object (or its dry run) and say what it changed."""
    path = _path(obj)
    before = call(api, "GET", path, missing_ok=True)
    query = f"?fieldManager={FIELD_MANAGER}" + ("&dryRun=All" if dry_run else "")
    after = call(api, "PATCH", path + query, obj, APPLY)
    name, kind = obj["metadata"]["name"], obj["kind"]
    if before is None:
        return AppliedChange(kind=kind, name=name, action="create")
    changed = _differences(_stable(before), _stable(after))
    return AppliedChange(kind=kind, name=name, action="update" if changed else "unchanged", changed=changed)


def apply_objects(kubeconfig: str | Path, context: str | None, objects: list[dict], write: bool) -> ApplyReport:
    """Dry-run every object; with `write`, then apply them for real (field manager gpusched)."""
    api = connect(kubeconfig, context)
    with api:
        changes = [_apply(api, obj, dry_run=True) for obj in objects]
        if write:
            changes = [_apply(api, obj, dry_run=False) for obj in objects]
        return ApplyReport(server=api.configuration.host, dry_run=not write, changes=changes)
