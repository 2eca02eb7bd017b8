"""The NVIDIA DRA driver's ResourceSlices and the ResourceClaims allocated from them: exact GPUs, MIG instances
and who holds them.

Facts, from NVIDIA/k8s-dra-driver-gpu (cmd/gpu-kubelet-plugin/deviceinfo.go, mig.go, partitions.go):
- driver `gpu.nvidia.com`; a slice per node (`spec.nodeName`, pool named after the node);
- a whole GPU is device `gpu-<minor>` with attributes `type` = `gpu`, `productName` (the NVML name), `uuid`,
  `architecture`, `cudaComputeCapability`, `resource.kubernetes.io/pcieRoot`, and capacity `memory` (bytes);
- a MIG device is `gpu-<parent minor>-mig-<profile, dots removed>-<profile ID>-<placement start>` with attributes
  `type` = `mig`, `profile` (e.g. `1g.10gb`), `parentUUID`, and capacity `memory` and `memorySlice<i>`;
- devices that consume shared counters are partitions the driver creates on allocation (dynamic MIG): they do not
  exist until allocated.
A ResourceClaim's `status.allocation.devices.results` names (driver, pool, device); `status.reservedFor` the pods.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...models.dra import Device, ResourceClaim, ResourceSlice
from ...models.quantity import to_int

__all__ = ["DRIVER", "DraGpu", "DraMig", "DraNode", "claim_holders", "read_slices"]

DRIVER = "gpu.nvidia.com"
_GPU_NAME = re.compile(r"^gpu-(\d+)$")
_MIG_NAME = re.compile(r"^gpu-(\d+)-mig-(.+)-(\d+)-(\d+)$")


@dataclass(frozen=True)
class DraGpu:
    index: int
    product: str
    memory_bytes: int | None


@dataclass(frozen=True)
class DraMig:
    gpu: int
    profile: str
    start: int
    device: str


@dataclass
class DraNode:
    pool: str
    gpus: dict[int, DraGpu] = field(default_factory=dict)
    migs: list[DraMig] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # why devices were left out


def read_slices(slices: list[ResourceSlice]) -> dict[str, DraNode]:
    """The NVIDIA GPU devices per node; slices of other drivers are not GPUs gpusched can model."""
    nodes: dict[str, DraNode] = {}
    for item in slices:
        spec = item.spec
        if spec.driver != DRIVER or not spec.node_name:
            continue
        node = nodes.setdefault(spec.node_name, DraNode(spec.pool.name))
        for device in spec.devices:
            _add(node, device)
    return nodes


def _add(node: DraNode, device: Device) -> None:
    kind = _text(device, "type")
    if device.consumes_counters:
        node.skipped.append(f"{device.name}: a partition created on allocation (dynamic MIG), not an existing device")
        return
    if kind == "gpu":
        match = _GPU_NAME.match(device.name)
        if not match:
            node.skipped.append(f"{device.name}: a GPU not named gpu-<minor>")
            return
        memory = device.capacity.get("memory")
        node.gpus[int(match.group(1))] = DraGpu(
            int(match.group(1)), _text(device, "productName") or "", None if memory is None else to_int(memory.value)
        )
    elif kind == "mig":
        match = _MIG_NAME.match(device.name)
        profile = _text(device, "profile")
        if not match or not profile:
            node.skipped.append(f"{device.name}: a MIG device not named gpu-<minor>-mig-<profile>-<id>-<start>")
            return
        node.migs.append(DraMig(int(match.group(1)), profile, int(match.group(4)), device.name))
    else:
        node.skipped.append(f"{device.name}: type {kind or 'missing'}, not gpu or mig")


def _text(device: Device, name: str) -> str | None:
    """A string attribute by its short name or qualified with the driver's domain."""
    attribute = device.attributes.get(name) or device.attributes.get(f"{DRIVER}/{name}")
    return attribute.string_value if attribute else None


def claim_holders(claims: list[ResourceClaim]) -> dict[tuple[str, str], str]:
    """(pool, device) -> the pod holding it: `namespace/pod` from reservedFor, or `namespace/claim (claim)` when
    the claim is allocated but no pod uses it yet."""
    holders: dict[tuple[str, str], str] = {}
    for claim in claims:
        allocation = claim.status.allocation if claim.status else None
        if claim.status is None or allocation is None:
            continue
        namespace = claim.metadata.namespace or "default"
        pods = [ref.get("name") for ref in (claim.status.reserved_for or ()) if ref.get("resource") == "pods"]
        holder = f"{namespace}/{pods[0]}" if pods else f"{namespace}/{claim.metadata.name} (claim)"
        for result in allocation.devices.results:
            if result.driver == DRIVER:
                holders[(result.pool, result.device)] = holder
    return holders
