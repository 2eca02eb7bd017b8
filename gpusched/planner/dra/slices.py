"""The ResourceSlices a DRA driver would publish for gpusched's cluster model, and its DeviceClasses.

Two driver profiles, one pool per node (pool name = node name, generation 1, one slice named `<node>-<driver>`):

- `gpu.example.com`, the seed's example driver: a device `gpu-<i>` per GPU with `type`, `model`, `index`,
  `nvlinkIsland`, `timeSliced` and a `memory` capacity; a device `gpu-<i>-mig-<profile, dots as dashes>-<start>` per
  MIG instance (same attributes plus `profile` and `placementStart`; memory is its share of the GPU).
- `gpu.nvidia.com`, NVIDIA's k8s-dra-driver-gpu (cmd/gpu-kubelet-plugin, deviceinfo.go and mig.go): `gpu-<minor>`
  with type, uuid, productName, brand, architecture, cudaComputeCapability, driverVersion, cudaDriverVersion,
  resource.kubernetes.io/pciBusID and pcieRoot, capacity memory; a MIG-enabled GPU publishes only its MIG devices
  `gpu-<minor>-mig-<profile without dots>-<profileId>-<start>` with the parent's attributes plus parentUUID, profile
  and their own uuid, capacities multiprocessors, copyEngines, decoders, encoders, jpegEngines, ofaEngines, memory
  and memorySlice<i> per memory slice. Devices are sorted by name, as the driver does. The driver has no NVLink
  attribute; gpusched adds `gpusched.io/nvlinkIsland`, in its own domain. What the model does not know is
  synthesized, deterministically: UUIDs (from node and index), PCI bus IDs, one PCIe root per NVLink island, the
  driver version, and MIG engine counts (A100-80GB's per profile shape).

The model's busy GPUs and held MIG instances are the devices other claims already hold (`held_devices`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from ...errors import InputError
from ...models.cluster import Cluster, GpuBlock, Node
from ...models.dra import (
    API_VERSION,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClass,
    DeviceClassSpec,
    DeviceSelector,
    ObjectMeta,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from ...models.mig import MigProfile, profiles_for
from ...models.quantity import format_quantity

__all__ = [
    "DRIVERS",
    "EXAMPLE",
    "NVIDIA",
    "NVLINK_ATTRIBUTE",
    "cluster_slices",
    "driver_classes",
    "held_devices",
    "island_attribute",
    "mig_class",
    "product_name",
]

EXAMPLE, NVIDIA = "gpu.example.com", "gpu.nvidia.com"
DRIVERS = (EXAMPLE, NVIDIA)
NVLINK_ATTRIBUTE = "gpusched.io/nvlinkIsland"


def product_name(model: str) -> str:
    """NVIDIA's productName attribute for a GPU model."""
    return f"NVIDIA {model}"


def mig_class(driver: str) -> str:
    """The driver's DeviceClass of MIG devices (mig.nvidia.com beside gpu.nvidia.com)."""
    return "mig" + driver.removeprefix("gpu")


def island_attribute(driver: str) -> str:
    """The qualified attribute naming a device's NVLink island: the example driver's own, gpusched's for NVIDIA."""
    return NVLINK_ATTRIBUTE if driver == NVIDIA else f"{driver}/nvlinkIsland"


GIB = 2**30
DRIVER_VERSION, CUDA_DRIVER_VERSION = "580.95.5", "13.0.0"
# (architecture, CUDA compute capability) by a substring of the model name, first match wins
_ARCHITECTURES = (
    ("GB200", "Blackwell", "10.0.0"),
    ("B200", "Blackwell", "10.0.0"),
    ("H200", "Hopper", "9.0.0"),
    ("H100", "Hopper", "9.0.0"),
    ("L40", "Ada Lovelace", "8.9.0"),
    ("L4", "Ada Lovelace", "8.9.0"),
    ("A100", "Ampere", "8.0.0"),
    ("A10", "Ampere", "8.6.0"),
    ("T4", "Turing", "7.5.0"),
    ("V100", "Volta", "7.0.0"),
)
# MIG engines per profile ID: multiprocessors, copyEngines, decoders, encoders, jpegEngines, ofaEngines (A100-80GB)
_ENGINES = {
    19: (14, 1, 0, 0, 0, 0),
    20: (14, 1, 1, 0, 1, 1),
    15: (14, 1, 1, 0, 0, 0),
    14: (28, 2, 1, 0, 0, 0),
    9: (42, 3, 2, 0, 0, 0),
    5: (56, 4, 2, 0, 0, 0),
    0: (98, 7, 5, 0, 1, 1),
}
_ENGINE_NAMES = ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")


def _string(value: str) -> DeviceAttribute:
    return DeviceAttribute(string_value=value)


def _int(value: int) -> DeviceAttribute:
    return DeviceAttribute(int_value=value)


def _memory(gib: float) -> DeviceCapacity:
    return DeviceCapacity(value=format_quantity("memory", round(gib * GIB)))


# --- the example driver -------------------------------------------------------------------------------------------


def _example_devices(node: Node, gpu: GpuBlock) -> list[Device]:
    islands, profiles = gpu.island_of(), profiles_for(gpu.model, gpu.memory_gib)
    devices = []
    for index in range(gpu.count):
        common = {"model": _string(gpu.model), "index": _int(index), "nvlinkIsland": _int(islands[index])}
        instances = sorted((m for m in gpu.mig if m.gpu == index), key=lambda m: m.start)
        if not instances:
            attributes = {"type": _string("gpu"), **common, "timeSliced": DeviceAttribute(bool_value=gpu.replicas > 1)}
            devices.append(
                Device(name=f"gpu-{index}", attributes=attributes, capacity={"memory": _memory(gpu.memory_gib)})
            )
        for instance in instances:
            profile = profiles[instance.profile]
            attributes = {
                "type": _string("mig"),
                **common,
                "profile": _string(profile.name),
                "placementStart": _int(instance.start),
                "timeSliced": DeviceAttribute(bool_value=False),
            }
            devices.append(
                Device(
                    name=_example_mig_name(index, profile.name, instance.start),
                    attributes=attributes,
                    capacity={"memory": _memory(profile.memory_gib(gpu.memory_gib))},
                )
            )
    return devices


def _example_mig_name(index: int, profile: str, start: int) -> str:
    return f"gpu-{index}-mig-{profile.replace('.', '-').replace('+', '-')}-{start}"


# --- NVIDIA's driver ----------------------------------------------------------------------------------------------


def _architecture(model: str) -> tuple[str, str]:
    name = model.upper()
    return next(((arch, cc) for key, arch, cc in _ARCHITECTURES if key in name), ("Unknown", "0.0.0"))


def _uuid(prefix: str, *parts: object) -> str:
    return f"{prefix}-{uuid.uuid5(uuid.NAMESPACE_URL, '/'.join(['gpusched', *map(str, parts)]))}"


def _nvidia_common(node: Node, gpu: GpuBlock, index: int) -> dict[str, DeviceAttribute]:
    """The attributes a MIG device shares with its parent GPU."""
    arch, compute = _architecture(gpu.model)
    island = gpu.island_of()[index]
    return {
        "productName": _string(product_name(gpu.model)),
        "brand": _string("Nvidia"),
        "architecture": _string(arch),
        "cudaComputeCapability": DeviceAttribute(version_value=compute),
        "driverVersion": DeviceAttribute(version_value=DRIVER_VERSION),
        "cudaDriverVersion": DeviceAttribute(version_value=CUDA_DRIVER_VERSION),
        "resource.kubernetes.io/pciBusID": _string(f"0000:{0x10 + index:02x}:00.0"),
        "resource.kubernetes.io/pcieRoot": _string(f"pci0000:{island:02x}"),
        NVLINK_ATTRIBUTE: _int(island),
    }


def _nvidia_mig_name(index: int, profile: MigProfile, start: int) -> str:
    compact = "".join(c if c.isalnum() or c in "-." else "-" for c in profile.name.replace(".", "").lower()).strip("-")
    return f"gpu-{index}-mig-{compact}-{profile.shape.profile_id}-{start}"


def _nvidia_devices(node: Node, gpu: GpuBlock) -> list[Device]:
    profiles = profiles_for(gpu.model, gpu.memory_gib)
    devices = []
    for index in range(gpu.count):
        parent = _uuid("GPU", node.name, index)
        common = _nvidia_common(node, gpu, index)
        instances = [m for m in gpu.mig if m.gpu == index]
        if not instances:
            attributes = {"type": _string("gpu"), "uuid": _string(parent), **common}
            devices.append(
                Device(name=f"gpu-{index}", attributes=attributes, capacity={"memory": _memory(gpu.memory_gib)})
            )
        for instance in instances:
            profile = profiles[instance.profile]
            attributes = {
                "type": _string("mig"),
                "uuid": _string(_uuid("MIG", node.name, index, instance.start)),
                "parentUUID": _string(parent),
                "profile": _string(profile.name),
                **common,
            }
            engines = _ENGINES[profile.shape.profile_id]
            capacity = {
                name: DeviceCapacity(value=str(count)) for name, count in zip(_ENGINE_NAMES, engines, strict=True)
            }
            capacity["memory"] = _memory(profile.memory_gib(gpu.memory_gib))
            for memory_slice in profile.slices(instance.start):
                capacity[f"memorySlice{memory_slice}"] = DeviceCapacity(value="1")
            devices.append(
                Device(name=_nvidia_mig_name(index, profile, instance.start), attributes=attributes, capacity=capacity)
            )
    return sorted(devices, key=lambda device: device.name)


_PROFILES: dict[str, Callable[[Node, GpuBlock], list[Device]]] = {EXAMPLE: _example_devices, NVIDIA: _nvidia_devices}


def _check(driver: str) -> None:
    if driver not in _PROFILES:
        raise InputError("driver", f"expected {' or '.join(DRIVERS)}, got {driver!r}")


def cluster_slices(cluster: Cluster, driver: str = EXAMPLE) -> list[ResourceSlice]:
    """One slice per node with GPUs, in the cluster's node order."""
    _check(driver)
    slices = []
    for node in cluster.nodes:
        if node.gpu is None or node.gpu.count == 0:
            continue
        spec = ResourceSliceSpec(
            driver=driver,
            pool=ResourcePool(name=node.name, generation=1, resource_slice_count=1),
            node_name=node.name,
            devices=tuple(_PROFILES[driver](node, node.gpu)),
        )
        slices.append(ResourceSlice(metadata=ObjectMeta(name=f"{node.name}-{driver}"), spec=spec))
    return slices


def held_devices(cluster: Cluster, driver: str = EXAMPLE) -> set[tuple[str, str, str]]:
    """(driver, pool, device) of every GPU the model marks busy and every MIG instance with a holder."""
    _check(driver)
    held = set()
    for node in cluster.nodes:
        gpu = node.gpu
        if gpu is None:
            continue
        profiles = profiles_for(gpu.model, gpu.memory_gib) if gpu.mig else {}
        for busy in gpu.busy:
            held.add((driver, node.name, f"gpu-{busy.gpu}"))
        for instance in gpu.mig:
            if instance.holder:
                profile = profiles[instance.profile]
                name = (
                    _example_mig_name(instance.gpu, profile.name, instance.start)
                    if driver == EXAMPLE
                    else _nvidia_mig_name(instance.gpu, profile, instance.start)
                )
                held.add((driver, node.name, name))
    return held


def driver_classes(driver: str = EXAMPLE) -> list[DeviceClass]:
    """The driver's DeviceClasses: whole GPUs and MIG devices (NVIDIA's GPU class maps nvidia.com/gpu, v25.12+)."""
    _check(driver)
    classes = []
    for name, kind in ((driver, "gpu"), (mig_class(driver), "mig")):
        expression = f"device.driver == '{driver}' && device.attributes['{driver}'].type == '{kind}'"
        spec = DeviceClassSpec(
            selectors=(DeviceSelector.model_validate({"cel": {"expression": expression}}),),
            extended_resource_name="nvidia.com/gpu" if driver == NVIDIA and kind == "gpu" else None,
        )
        classes.append(DeviceClass(api_version=API_VERSION, metadata=ObjectMeta(name=name), spec=spec))
    return classes
