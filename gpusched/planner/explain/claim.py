"""A DRA ResourceClaim that asks for what a pod needs: the count, the model, the memory, one NVLink island, a MIG
profile — the attributes the integer `nvidia.com/gpu` cannot carry, in the CEL and constraints the allocator reads."""

from __future__ import annotations

from ...models.cluster import Cluster
from ...models.workload import GpuNeeds
from ..dra.objects import objects_from
from ..dra.run import run_dra
from ..dra.slices import EXAMPLE, NVIDIA, NVLINK_ATTRIBUTE, driver_classes
from .report import ClaimInfo

__all__ = ["check_claim", "claim_for"]

REQUEST = "gpus"


def _selectors(needs: GpuNeeds, driver: str) -> list[str]:
    attributes = f"device.attributes['{driver}']"
    expressions = []
    if needs.mig_profile:
        expressions.append(f"{attributes}.profile == '{needs.mig_profile}'")
    elif needs.model:
        name = f"NVIDIA {needs.model}" if driver == NVIDIA else needs.model
        field = "productName" if driver == NVIDIA else "model"
        expressions.append(f"{attributes}.{field} == '{name}'")
    if needs.memory_gib:
        expressions.append(f"device.capacity['{driver}'].memory.compareTo(quantity('{needs.memory_gib:g}Gi')) >= 0")
    return expressions


def claim_for(name: str, needs: GpuNeeds, gpus: int, driver: str = NVIDIA, namespace: str | None = None) -> dict:
    """resource.k8s.io/v1 ResourceClaim `<name>-gpus` for `gpus` devices of the driver's GPU (or MIG) class."""
    if needs.shared:
        raise ValueError("a time-sliced replica is device configuration (the driver's sharing settings), not a claim")
    device_class = ("mig" + driver.removeprefix("gpu")) if needs.mig_profile else driver
    exactly: dict = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": gpus}
    selectors = _selectors(needs, driver)
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": expression}} for expression in selectors]
    spec: dict = {"devices": {"requests": [{"name": REQUEST, "exactly": exactly}]}}
    if needs.nvlink and gpus > 1 and not needs.mig_profile:
        island = NVLINK_ATTRIBUTE if driver == NVIDIA else f"{EXAMPLE}/nvlinkIsland"
        spec["devices"]["constraints"] = [{"requests": [REQUEST], "matchAttribute": island}]
    metadata = {"name": f"{name.rpartition('/')[2]}-gpus"}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata, "spec": spec}


def check_claim(cluster: Cluster, claim: dict, driver: str = NVIDIA) -> ClaimInfo:
    """Allocate the claim with gpusched's DRA allocator against the cluster's slices, as the scheduler would."""
    documents = [*(c.wire() for c in driver_classes(driver)), claim]
    report = run_dra(cluster, objects_from([("the emitted claim", documents)]), driver)
    outcome = report.claims[0]
    return ClaimInfo(
        claim=outcome.claim,
        allocated=outcome.allocated,
        node=outcome.node,
        devices=outcome.devices,
        reason=outcome.reason,
        diagnosis=outcome.diagnosis,
    )
