"""DRA claims in the resource.k8s.io/v1 shape (the requests gpusched reads; the allocator lives in the planner)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ResourceClaim", "ClaimList"]


class K8s(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class CelSelector(K8s):
    expression: str


class Selector(K8s):
    cel: CelSelector


class DeviceToleration(K8s):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "NoExecute", "None"] = ""


class ExactRequest(K8s):
    device_class_name: str = Field(alias="deviceClassName")
    allocation_mode: Literal["ExactCount", "All"] = Field("ExactCount", alias="allocationMode")
    count: int = Field(1, ge=1)
    selectors: list[Selector] = Field(default_factory=list)
    admin_access: bool = Field(False, alias="adminAccess")
    tolerations: list[DeviceToleration] = Field(default_factory=list)


class SubRequest(ExactRequest):
    name: str


class DeviceRequest(K8s):
    name: str
    exactly: ExactRequest | None = None
    first_available: list[SubRequest] | None = Field(None, alias="firstAvailable")


class DeviceConstraint(K8s):
    requests: list[str] = Field(default_factory=list)
    match_attribute: str | None = Field(None, alias="matchAttribute")
    distinct_attribute: str | None = Field(None, alias="distinctAttribute")


class DeviceClaim(K8s):
    requests: list[DeviceRequest] = Field(default_factory=list)
    constraints: list[DeviceConstraint] = Field(default_factory=list)


class ClaimSpec(K8s):
    devices: DeviceClaim


class Metadata(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    namespace: str = "default"


class ResourceClaim(K8s):
    api_version: Literal["resource.k8s.io/v1"] = Field("resource.k8s.io/v1", alias="apiVersion")
    kind: Literal["ResourceClaim"] = "ResourceClaim"
    metadata: Metadata
    spec: ClaimSpec


class ClaimList(K8s):
    claims: list[ResourceClaim]
