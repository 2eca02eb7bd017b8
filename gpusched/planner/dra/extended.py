"""Extended resources backed by DRA (DRAExtendedResource: alpha 1.34, beta and on by default 1.36, GA 1.37).

How kube-scheduler 1.37 does it (pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go,
noderesources/fit.go, dynamic-resource-allocation/deviceclass/extendedresourcecache):

- A DeviceClass maps two resource names to itself: `spec.extendedResourceName` when set, and always the implicit
  `deviceclass.resource.kubernetes.io/<class name>`. When two classes name the same extendedResourceName, the newer
  (creationTimestamp) wins, equal times the lower name.
- NodeResourcesFit skips a pod's resource when a class maps it and the node's allocatable of it is 0 (no device
  plugin); with allocatable > 0 the device plugin serves it and NodeResourcesFit checks it as usual.
- DynamicResources, per node, gives the pod one extra claim (in memory `<extended-resources>`, created at PreBind
  as `<pod>-extended-resources-<random>`, after the pod's own claims) holding, for every resource it must serve, one
  ExactCount request per container asking for it: `container-<i>-request-<j>` (i: index over initContainers then
  containers; j: index of the resource among the container's sorted request names), count = the container's request.
  Init containers reuse later long-lived containers' requests where those cover them; requests sorted by name.
  It is allocated together with the pod's claims, so failures read as theirs (`cannot allocate all claims`).
  PreBind writes `status.extendedResourceClaimStatus` {requestMappings: [{containerName, resourceName,
  requestName}], resourceClaimName}.
"""

from __future__ import annotations

from ...models.dra import DeviceClass, ResourceClaim
from ...models.kube import KubeNode, KubePod
from . import features

__all__ = [
    "IMPLICIT_PREFIX",
    "SPECIAL_NAME",
    "class_mapping",
    "uses_extended",
    "dra_served",
    "extended_claim",
    "enabled",
]

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
SPECIAL_NAME = "<extended-resources>"


def enabled(version: tuple[int, ...]) -> bool:
    """On by default from 1.36 (beta); GA and locked on in 1.37."""
    return features.enabled("DRAExtendedResource", version)


def class_mapping(classes: dict[str, DeviceClass]) -> dict[str, DeviceClass]:
    """Resource name -> DeviceClass, as the scheduler's ExtendedResourceCache resolves it."""
    found: dict[str, DeviceClass] = {}
    for cls in classes.values():
        found[IMPLICIT_PREFIX + cls.metadata.name] = cls
    explicit: dict[str, DeviceClass] = {}
    for cls in classes.values():
        name = cls.spec.extended_resource_name
        if not name:
            continue
        other = explicit.get(name)
        if other is None or _newer(cls, other):
            explicit[name] = cls
    return {**found, **explicit}


def _newer(one: DeviceClass, other: DeviceClass) -> bool:
    a, b = one.metadata.creation_timestamp or "", other.metadata.creation_timestamp or ""
    return a > b if a != b else one.metadata.name < other.metadata.name  # RFC 3339 UTC strings sort by time


def uses_extended(pod: KubePod, mapping: dict[str, DeviceClass]) -> bool:
    return any(value > 0 and name in mapping for name, value in pod.requests.items())


def dra_served(pod: KubePod, node: KubeNode, mapping: dict[str, DeviceClass]) -> dict[str, int]:
    """The pod's resources this node must serve through DRA: mapped, and no device-plugin allocatable."""
    return {
        name: value
        for name, value in sorted(pod.requests.items())
        if value > 0 and name in mapping and node.allocatable.get(name, 0) == 0
    }


def _container_request(
    index: int, pod: KubePod, resource: str, class_name: str, reusable: list[dict | None]
) -> tuple[dict | None, list[dict]]:
    container = pod.containers[index]
    wanted = container.requests.get(resource, 0)
    if wanted <= 0:
        return None, []
    mappings, covered = [], 0
    for request in reusable:
        if request is None:
            continue
        covered += request["exactly"]["count"]
        mappings.append({"containerName": container.name, "resourceName": resource, "requestName": request["name"]})
        if covered >= wanted:
            return None, mappings
    position = sorted(container.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": wanted - covered},
    }
    mappings.append({"containerName": container.name, "resourceName": resource, "requestName": name})
    return request, mappings


def extended_claim(
    pod: KubePod, served: dict[str, int], mapping: dict[str, DeviceClass]
) -> tuple[ResourceClaim, list[dict]]:
    """The node's special claim and the pod's request mappings (createRequestsAndMappings)."""
    long_lived = [i for i, c in enumerate(pod.containers) if not c.init or c.sidecar]
    short_lived = [i for i, c in enumerate(pod.containers) if c.init and not c.sidecar]
    requests: list[dict] = []
    mappings: list[dict] = []
    for resource in sorted(served):
        class_name = mapping[resource].metadata.name
        per_container: list[dict | None] = [None] * len(pod.containers)
        long_maps: list[dict] = []
        for i in long_lived:
            per_container[i], found = _container_request(i, pod, resource, class_name, [])
            long_maps += found
        biggest: dict | None = None
        short_names: set[str] = set()
        short_maps: list[dict] = []
        for i in short_lived:
            request, found = _container_request(i, pod, resource, class_name, per_container[i:])
            if request is not None:
                short_names.add(request["name"])
                if biggest is None or biggest["exactly"]["count"] < request["exactly"]["count"]:
                    biggest = request
            short_maps += found
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest["name"])
            short_maps = [
                {**m, "requestName": biggest["name"]} if m["requestName"] in short_names else m for m in short_maps
            ]
        requests += [biggest] if biggest is not None else []
        requests += [r for r in per_container if r is not None]
        mappings += long_maps + short_maps
    requests.sort(key=lambda r: r["name"])
    claim = ResourceClaim.model_validate(
        {
            "metadata": {
                "name": SPECIAL_NAME,
                "namespace": pod.namespace,
                "generateName": f"{pod.name}-extended-resources-",
                "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            },
            "spec": {"devices": {"requests": requests}},
        }
    )
    return claim, mappings
