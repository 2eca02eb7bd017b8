"""Every plugin name, spelled once: statuses, messages and explanations all refer to these."""

from __future__ import annotations

__all__ = [
    "NODE_NAME",
    "NODE_UNSCHEDULABLE",
    "TAINT_TOLERATION",
    "NODE_AFFINITY",
    "NODE_PORTS",
    "SCHEDULING_GATES",
    "NODE_RESOURCES_FIT",
    "POD_TOPOLOGY_SPREAD",
    "INTER_POD_AFFINITY",
    "DYNAMIC_RESOURCES",
    "DEFAULT_PREEMPTION",
    "NODE_RESOURCES_BALANCED_ALLOCATION",
    "IMAGE_LOCALITY",
    "VOLUME_BINDING",
    "GPU_DEVICES",
]

NODE_NAME = "NodeName"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
SCHEDULING_GATES = "SchedulingGates"
NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
DYNAMIC_RESOURCES = "DynamicResources"
DEFAULT_PREEMPTION = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
VOLUME_BINDING = "VolumeBinding"
GPU_DEVICES = "GpuDevices"  # gpusched's own: the GPU view's check of model, memory, sharing, MIG and NVLink
