"""Seeded DRA objects for the differential scenarios: what NVIDIA's DRA driver publishes and what users claim.

- DeviceClasses `gpu.nvidia.com` and `mig.nvidia.com` as the driver's Helm chart installs them (by device type),
  sometimes with an opaque config that the allocation result must carry (`source: FromClass`).
- One ResourceSlice per node with a driver (pool = node name), devices sorted by name as the driver sorts them:
  `gpu-<minor>` with type, uuid, productName, brand, architecture, index, cudaComputeCapability, driverVersion,
  cudaDriverVersion, resource.kubernetes.io/pciBusID and pcieRoot and a memory capacity; a MIG-enabled GPU
  publishes only its MIG devices `gpu-<minor>-mig-<profile without dots>-<profile ID>-<start>` (parentUUID, profile,
  multiprocessors, engines, memory, memorySlice<i>). Now and then a device carries a health taint, and a node's
  devices are split over two slices of one pool.
- Now and then a pool of partitionable devices (DRAPartitionableDevices, beta and on in 1.36+), as the driver's
  dynamic MIG mode publishes it: a slice of shared counters per GPU (memory-slice-0..7, multiprocessors) and a slice
  with the whole GPU and every MIG placement, each consuming its memory slices and multiprocessors.
- The GPU class sometimes maps the extended resource `nvidia.com/gpu` (extendedResourceName, GA in 1.37, as the
  driver sets from v25.12): pods asking for it on nodes without a device plugin get a claim made by the scheduler.
- ResourceClaims (by name, shared with an earlier pod, or from a ResourceClaimTemplate) with CEL selectors on
  attributes and capacity, counts, allocationMode All, tolerations, firstAvailable subrequests, matchAttribute and
  distinctAttribute constraints and an opaque config (`source: FromClaim`).

- Now and then a node's whole GPUs are multi-allocatable (DRAConsumableCapacity, beta and on in 1.36+): each
  allocation takes a share of the GPU's memory, bounded by a requestPolicy (none, a default, a range with a step and
  a max, or valid values) - now and then one the API server refuses (its slice is then not created) - and claims ask
  for `capacity.requests` of memory (or of a capacity a GPU lacks, or a negative amount: the allocator's error).

- Now and then DeviceTaintRules (GA and on in 1.37): a taint for the devices of a pool, one device (by name in one
  pool or in every pool), every device of the driver, everything (the empty selector) or nothing (no selector).

Selectors name attributes every device of their class has, except a few (FAULTY) that fail at runtime on some
devices: the scheduler then stops with the allocator's error. They use the whole of Kubernetes' CEL: optional
syntax, cel.bind, sets, lists, strings.format, two-variable comprehensions, ip/cidr, url, regex, semver(s, true).
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ..planner.dra import features

__all__ = [
    "API_VERSION",
    "DRIVER",
    "GPU_CLASS",
    "MIG_CLASS",
    "DELETING",
    "FINALIZER",
    "classes",
    "claims_for",
    "slices",
    "taint_rules",
    "for_release",
]

API_VERSION = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
GPU_CLASS, MIG_CLASS = "gpu.nvidia.com", "mig.nvidia.com"
GIB, MIB = 2**30, 2**20
REFUSED = "gpusched.io/refused"  # annotates an object (or pod) drawn with a value the API server refuses


@dataclass(frozen=True)
class _Model:
    product: str
    architecture: str
    compute: str
    memory_gib: int
    mig: bool


MODELS = (
    _Model("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 80, True),
    _Model("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, True),
    _Model("NVIDIA L4", "Ada Lovelace", "8.9.0", 24, False),
)
# MIG profiles of the 80 GB parts: profile ID, memory MiB, memory slices, multiprocessors, copy engines, decoders
PROFILES = {
    "1g.10gb": (19, 9728, 1, 14, 1, 0),
    "2g.20gb": (14, 19968, 2, 28, 2, 1),
    "3g.40gb": (9, 40192, 4, 42, 3, 2),
    "4g.40gb": (5, 40192, 4, 56, 4, 2),
    "7g.80gb": (0, 80896, 8, 98, 7, 5),
}
# Where each profile may start (its first memory slice)
PLACEMENTS = {"1g.10gb": range(7), "2g.20gb": (0, 2, 4), "3g.40gb": (0, 4), "4g.40gb": (0,), "7g.80gb": (0,)}
# Valid MIG layouts: (profile, memory start) per instance
LAYOUTS = (
    tuple(("1g.10gb", start) for start in range(7)),
    (("3g.40gb", 0), ("3g.40gb", 4)),
    (("4g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)),
    (("2g.20gb", 0), ("2g.20gb", 2), ("3g.40gb", 4)),
    (("7g.80gb", 0),),
)
TAINTS = (
    {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"},
    {"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoExecute"},
    {"key": "gpu.nvidia.com/xid", "value": "13", "effect": "None"},
    {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoSchedule"},
    {"key": "gpu.nvidia.com/unmonitored", "effect": "None"},
)
TOLERATIONS = (
    {"key": "gpu.nvidia.com/xid", "operator": "Exists"},
    {"operator": "Exists", "effect": "NoSchedule"},
    {"key": "gpu.nvidia.com/gpu-lost", "operator": "Exists", "effect": "NoExecute"},
)
_ATTR = f"device.attributes['{DRIVER}']"
_CAP = f"device.capacity['{DRIVER}']"
SELECTORS = {
    GPU_CLASS: (
        f"{_CAP}.memory.compareTo(quantity('40Gi')) >= 0",
        f"{_ATTR}.productName == 'NVIDIA H100 80GB HBM3'",
        f"{_ATTR}.architecture in ['Ampere', 'Hopper']",
        f"{_ATTR}.cudaComputeCapability.isGreaterThan(semver('8.5.0'))",
        f"{_ATTR}.index % 2 == 1",
        f"{_ATTR}.index < 4",
        "device.attributes['resource.kubernetes.io'].pcieRoot != 'pci0000:00'",
        f"{_CAP}.memory.isLessThan(quantity('30Gi'))",
        f"cel.bind(a, {_ATTR}, a.?architecture.orValue('') == 'Hopper' || a.?productName.orValue('').endsWith('L4'))",
        f"sets.contains(['Ampere', 'Ada Lovelace'], [{_ATTR}.architecture])",
        f"{_ATTR}.productName.split(' ').exists(i, w, i > 0 && w.startsWith('A1'))",
        f"[1, 3, 5].exists(i, v, v == {_ATTR}.index)",
        f"[0, 2, 4, 6].indexOf({_ATTR}.index) >= 0 && string(ip('10.0.0.' + string({_ATTR}.index))).endsWith('0')",
        f"{_ATTR}.architecture == '%s'.format(['Hopper']) || 'gpu-%d'.format([3]) == {_ATTR}.uuid",
        f"semver('v9', true).isGreaterThan({_ATTR}.cudaComputeCapability) && {_ATTR}.?uuid.hasValue()",
        f"cidr('10.0.0.0/30').containsIP(ip('10.0.0.' + string({_ATTR}.index)))",
        f"isURL('https://nvidia.com/' + {_ATTR}.architecture) && url('https://nvidia.com:8443/x').getPort() == '8443'",
        f"url('https://nvidia.com/' + {_ATTR}.architecture).getEscapedPath() == '/Hopper'",
        f"[3, 2, 1].sort().slice(0, 2).sum() == 3 && [[1], [2]].flatten().isSorted() && {_ATTR}.index >= 2",
        f"{_ATTR}.uuid.find('GPU-[0-9a-f]').size() == 5 && ['a', 'b'].transformList(i, v, v + 'x') == ['ax', 'bx']",
        f"optional.of({_ATTR}.index).orValue(0) < 2 && !{_ATTR}.?parentUUID.hasValue()",
    ),
    MIG_CLASS: (
        f"{_ATTR}.profile == '1g.10gb'",
        f"{_ATTR}.profile in ['2g.20gb', '3g.40gb']",
        f"{_CAP}.memory.compareTo(quantity('20Gi')) >= 0",
        f"{_CAP}.multiprocessors.isGreaterThan(quantity('30'))",
        f"{_ATTR}.productName.startsWith('NVIDIA A100')",
        f"{_ATTR}.parentUUID.endsWith('0') || {_ATTR}.parentUUID.endsWith('1')",
        f"{_ATTR}.?profile.orValue('') in ['1g.10gb', '7g.80gb']",
        f"sets.intersects([{_ATTR}.profile], ['3g.40gb', '4g.40gb'])",
        f"{{'1g.10gb': 1, '2g.20gb': 2}}.exists(k, v, k == {_ATTR}.profile && v >= 1)",
        f"lists.range(8).all(i, !has({_CAP}.memorySlice0) || i >= 0) && {_CAP}.memory.isLessThan(quantity('30Gi'))",
    ),
}
# Now and then a selector that fails at runtime on some devices: the allocator stops with an error
FAULTY = {
    GPU_CLASS: (
        f"{_ATTR}.parentUUID.startsWith('GPU')",
        f"{_CAP}.multiprocessors.isGreaterThan(quantity('1'))",
        f"{_ATTR}.productName > 3",
        f"{_ATTR}.cudaComputeCapability.isGreaterThan(semver('9'))",
        f"{_ATTR}.index == 0 || {_ATTR}.parentUUID == 'x'",
        f"9223372036854775807 - {_ATTR}.index + 1 > 0",
        f"{{'Ampere': 1, 'Hopper': 2}}[{_ATTR}.architecture] > 0",
        f"[10, 20][{_ATTR}.index] > 0",
        f"1 / ({_ATTR}.index - 1) >= 0",
        f"ip(['10.0.0.1', '10.0.0.300'][{_ATTR}.index % 2]).family() == 4",
    ),
    MIG_CLASS: (
        f"{_ATTR}.index == 1",
        f"{_ATTR}.profile == '1g.10gb' || {_ATTR}.index == 0",
        f"semver({_ATTR}.profile, true).major() == 1",
        f"[{_ATTR}.profile].filter(p, p == '3g.40gb').min() == '3g.40gb'",
    ),
}
# requestPolicy of a shared GPU's memory, by its size in GiB; the last few are refused by the API server
POLICIES = (
    lambda gib: None,
    lambda gib: {"default": f"{gib // 8}Gi"},
    lambda gib: {"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}},
    lambda gib: {"default": "4Gi", "validRange": {"min": "4Gi", "max": f"{gib // 2}Gi", "step": "4Gi"}},
    lambda gib: {"default": "2Gi", "validRange": {"min": "2Gi"}},
    lambda gib: {"default": f"{gib // 4}Gi", "validValues": [f"{gib // 8}Gi", f"{gib // 4}Gi", f"{gib // 2}Gi"]},
    lambda gib: {"default": "5Gi", "validValues": ["4Gi", "8Gi"]},  # the default is no valid value
    lambda gib: {"default": "12Gi", "validRange": {"min": "8Gi", "step": "8Gi"}},  # the default is off the steps
    lambda gib: {"default": "8Gi", "validRange": {"min": "8Gi", "max": f"{2 * gib}Gi"}},  # max above the capacity
)
REFUSED_POLICIES = 3  # the last POLICIES
# capacity.requests of a claim: mostly memory, now and then a capacity whole GPUs lack, or a negative amount
CAPACITY_REQUESTS = (
    {"memory": "10Gi"}, {"memory": "20Gi"}, {"memory": "24Gi"}, {"memory": "40Gi"}, {"memory": "1Gi"},
    {"memory": "15000Mi"}, {"memory": "0.5Gi"}, {"memory": "80Gi"}, {"memory": "100Gi"}, {"multiprocessors": "14"},
)  # fmt: skip
NEGATIVE_REQUEST = {"memory": "-1Gi"}
CONSTRAINTS = (
    ("matchAttribute", "resource.kubernetes.io/pcieRoot"),
    ("matchAttribute", f"{DRIVER}/productName"),
    ("matchAttribute", f"{DRIVER}/parentUUID"),
    ("distinctAttribute", "resource.kubernetes.io/pcieRoot"),
    ("distinctAttribute", f"{DRIVER}/parentUUID"),
)


def _meta(name: str, namespace: str | None = None) -> dict:
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def _opaque(kind: str, value: str) -> dict:
    return {"opaque": {"driver": DRIVER, "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": kind,
                                                         "sharing": {"strategy": value}}}}  # fmt: skip


def classes(rng: random.Random) -> list[dict]:
    """The driver's two classes; the GPU class sometimes with an opaque config, to be copied into allocations."""
    found = []
    for name, kind in ((GPU_CLASS, "gpu"), (MIG_CLASS, "mig")):
        expression = f"device.driver == '{DRIVER}' && {_ATTR}.type == '{kind}'"
        spec: dict = {"selectors": [{"cel": {"expression": expression}}]}
        if kind == "gpu" and rng.random() < 0.2:
            spec["config"] = [_opaque("GpuConfig", "TimeSlicing")]
        if kind == "gpu" and rng.random() < 0.4:
            spec["extendedResourceName"] = "nvidia.com/gpu"
        found.append({"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": _meta(name), "spec": spec})
    return found


# --- ResourceSlices -----------------------------------------------------------------------------------------------


def _uuid(prefix: str, *parts: object) -> str:
    return f"{prefix}-{uuid.uuid5(uuid.NAMESPACE_URL, '/'.join(map(str, parts)))}"


def _parent_attributes(model: _Model, node: str, index: int, per_root: int) -> dict:
    """What a MIG device shares with its GPU: identity, product, versions and PCI placement."""
    return {
        "productName": {"string": model.product},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": model.architecture},
        "cudaComputeCapability": {"version": model.compute},
        "driverVersion": {"version": "580.95.5"},
        "cudaDriverVersion": {"version": "13.0.0"},
        "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x10 + index:02x}:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index // per_root:02x}"},
    }


def _gpu(model: _Model, node: str, index: int, per_root: int) -> dict:
    attributes = {"type": {"string": "gpu"}, "uuid": {"string": _uuid("GPU", node, index)}, "index": {"int": index},
                  **_parent_attributes(model, node, index, per_root)}  # fmt: skip
    return {
        "name": f"gpu-{index}",
        "attributes": attributes,
        "capacity": {"memory": {"value": f"{model.memory_gib}Gi"}},
    }


def _mig(model: _Model, node: str, index: int, per_root: int, profile: str, start: int) -> dict:
    ident, memory, slices_, processors, copies, decoders = PROFILES[profile]
    attributes = {"type": {"string": "mig"}, "uuid": {"string": _uuid("MIG", node, index, start)},
                  "parentUUID": {"string": _uuid("GPU", node, index)}, "profile": {"string": profile},
                  **_parent_attributes(model, node, index, per_root)}  # fmt: skip
    capacity = {"multiprocessors": processors, "copyEngines": copies, "decoders": decoders, "encoders": 0,
                "jpegEngines": 0, "ofaEngines": 0, "memory": f"{memory}Mi"}  # fmt: skip
    capacity.update({f"memorySlice{i}": 1 for i in range(start, start + slices_)})
    name = f"gpu-{index}-mig-{profile.replace('.', '')}-{ident}-{start}"
    return {"name": name, "attributes": attributes, "capacity": {k: {"value": str(v)} for k, v in capacity.items()}}


def _tainted(rng: random.Random, devices: list[dict]) -> list[dict]:
    """Now and then a health taint; sorted by name, as the driver publishes them."""
    for device in devices:
        if rng.random() < 0.06:
            device["taints"] = [dict(rng.choice(TAINTS))]
    return sorted(devices, key=lambda device: device["name"])


def _devices(rng: random.Random, model: _Model, node: str) -> tuple[list[dict], set[str]]:
    """The node's devices, and those with a request policy the API server refuses."""
    count, per_root = rng.choice((1, 2, 4, 4, 8, 8)), rng.choice((2, 4))
    shared = rng.random() < 0.3  # the node's whole GPUs are multi-allocatable
    devices: list[dict] = []
    refused: set[str] = set()
    for index in range(count):
        if model.mig and rng.random() < 0.3:
            layout = rng.choice(LAYOUTS)
            devices.extend(_mig(model, node, index, per_root, profile, start) for profile, start in layout)
        elif shared:
            device, bad = _shared(rng, _gpu(model, node, index, per_root), model)
            devices.append(device)
            if bad:
                refused.add(device["name"])
        else:
            devices.append(_gpu(model, node, index, per_root))
    return _tainted(rng, devices), refused


def _shared(rng: random.Random, device: dict, model: _Model) -> tuple[dict, bool]:
    """A GPU whose memory allocations share, now and then under a request policy (rarely one the API server
    refuses: then True), or one that says explicitly that it is not shared."""
    if rng.random() < 0.15:
        return {**device, "allowMultipleAllocations": False}, False
    index = rng.randrange(len(POLICIES) if rng.random() < 0.1 else len(POLICIES) - REFUSED_POLICIES)
    policy = POLICIES[index](model.memory_gib)
    if policy is not None:
        device["capacity"]["memory"]["requestPolicy"] = policy
    return {**device, "allowMultipleAllocations": True}, index >= len(POLICIES) - REFUSED_POLICIES


def _consumes(counter_set: str, memory_slices: range, processors: int) -> list[dict]:
    counters = {f"memory-slice-{i}": {"value": "1"} for i in memory_slices}  # counter names are DNS labels
    counters["multiprocessors"] = {"value": str(processors)}
    return [{"counterSet": counter_set, "counters": counters}]


def _partitionable(rng: random.Random, model: _Model, node: str) -> tuple[list[dict], list[dict]]:
    """(counter sets, devices): per GPU the whole device and every MIG placement, all drawing on its counters."""
    count, per_root = rng.choice((1, 2, 4)), rng.choice((2, 4))
    counter_sets, devices = [], []
    for index in range(count):
        name = f"gpu-{index}-counter-set"
        everything = _consumes(name, range(8), PROFILES["7g.80gb"][3])
        counter_sets.append({"name": name, "counters": everything[0]["counters"]})
        devices.append({**_gpu(model, node, index, per_root), "consumesCounters": everything})
        for profile, starts in PLACEMENTS.items():
            _, _, memory_slices, processors, _, _ = PROFILES[profile]
            for start in starts:
                uses = _consumes(name, range(start, start + memory_slices), processors)
                devices.append({**_mig(model, node, index, per_root, profile, start), "consumesCounters": uses})
    return counter_sets, _tainted(rng, devices)


def _slice(node: str, number: int, count: int, body: dict) -> dict:
    spec = {"driver": DRIVER, "pool": {"name": node, "generation": 1, "resourceSliceCount": count}, "nodeName": node,
            **body}  # fmt: skip
    return {"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": _meta(f"{node}-{DRIVER}-{number}"),
            "spec": spec}  # fmt: skip


def slices(rng: random.Random, nodes: list[str]) -> list[dict]:
    """Most nodes run the driver; a pool is now and then published as two slices (the search goes by slice name),
    or as partitionable devices."""
    found = []
    for node in nodes:
        if rng.random() < 0.15:
            continue
        model = rng.choice(MODELS)
        if model.mig and rng.random() < 0.25:
            counter_sets, devices = _partitionable(rng, model, node)
            found.extend(
                [_slice(node, 0, 2, {"sharedCounters": counter_sets}), _slice(node, 1, 2, {"devices": devices})]
            )
            continue
        devices, refused = _devices(rng, model, node)
        parts = [devices] if len(devices) < 2 or rng.random() < 0.8 else [devices[1::2], devices[::2]]
        for number, part in enumerate(parts):
            found.append(_slice(node, number, len(parts), {"devices": part}))
            if any(device["name"] in refused for device in part):
                found[-1]["metadata"]["annotations"] = {REFUSED: "true"}
    return found


# --- DeviceTaintRules --------------------------------------------------------------------------------------------


def taint_rules(rng: random.Random, published: list[dict]) -> list[dict]:
    """Now and then one or two rules, each tainting some of the published devices (or none, or all)."""
    if not published or rng.random() < 0.7:
        return []
    pools = sorted({s["spec"]["pool"]["name"] for s in published})
    devices = sorted({(s["spec"]["pool"]["name"], d["name"]) for s in published for d in s["spec"].get("devices", [])})
    found = []
    for number in range(rng.choice((1, 1, 2))):
        pool, device = rng.choice(devices) if devices else (rng.choice(pools), "gpu-0")
        selector = rng.choice((
            {"pool": rng.choice(pools)}, {"driver": DRIVER, "pool": pool, "device": device}, {"pool": pool, "device": device},
            {"device": device}, {"driver": DRIVER}, {"driver": "other.example.com"}, {}, None,
        ))  # fmt: skip
        spec: dict = {"taint": dict(rng.choice(TAINTS))}
        if selector is not None:
            spec["deviceSelector"] = selector
        name = f"{published[0]['metadata']['name'].split('-n')[0]}-taint-{number}"
        found.append({"apiVersion": API_VERSION, "kind": "DeviceTaintRule", "metadata": _meta(name), "spec": spec})
    return found


# --- ResourceClaims -----------------------------------------------------------------------------------------------


def _exact(rng: random.Random) -> dict:
    """One way to ask for devices: a class, maybe selectors, a count or All, maybe tolerations."""
    cls = rng.choice((GPU_CLASS, GPU_CLASS, GPU_CLASS, MIG_CLASS))
    body: dict = {"deviceClassName": cls}
    selectors = rng.sample(SELECTORS[cls], k=rng.choice((0, 0, 0, 1, 1, 2)))
    if rng.random() < 0.08:
        body["allocationMode"] = "All"
        selectors = selectors or [rng.choice(SELECTORS[cls])]
    else:
        count = rng.choice((1, 1, 1, 1, 2, 2, 3, 4, 8))
        if count > 1 or rng.random() < 0.5:
            body["count"] = count
    if rng.random() < 0.03:
        selectors = [*selectors, rng.choice(FAULTY[cls])]
    if selectors:
        body["selectors"] = [{"cel": {"expression": expression}} for expression in selectors]
    if rng.random() < 0.15:
        body["tolerations"] = [dict(rng.choice(TOLERATIONS))]
    if rng.random() < 0.3:
        wanted = NEGATIVE_REQUEST if rng.random() < 0.03 else rng.choice(CAPACITY_REQUESTS)
        body["capacity"] = {"requests": dict(wanted)}
    return body


def _request(rng: random.Random, name: str) -> dict:
    if rng.random() < 0.25:
        subrequests = [{"name": f"s{i}", **_exact(rng)} for i in range(rng.choice((2, 2, 3)))]
        return {"name": name, "firstAvailable": subrequests}
    return {"name": name, "exactly": _exact(rng)}


def _claim_spec(rng: random.Random) -> dict:
    requests = [_request(rng, f"r{i}") for i in range(rng.choice((1, 1, 1, 2)))]
    devices: dict = {"requests": requests}
    if rng.random() < 0.3:
        kind, attribute = rng.choice(CONSTRAINTS)
        constraint: dict = {kind: attribute}
        if len(requests) > 1 and rng.random() < 0.5:
            constraint["requests"] = [requests[0]["name"]]
        devices["constraints"] = [constraint]
    if rng.random() < 0.1:
        devices["config"] = [{"requests": [requests[-1]["name"]], **_opaque("GpuConfig", "MPS")}]
    return {"devices": devices}


def claims_for(
    rng: random.Random, pods: list[dict], label: str, namespace: str, skip: Callable[[dict], bool]
) -> list[dict]:
    """Give most pods (not those `skip` names) one or two claims (new, from a template, or an earlier pod's);
    returns the claims and templates."""
    objects: list[dict] = []
    named: list[str] = []  # claims of earlier pods (a pod naming one claim twice fails PreBind, then binds on retry)
    for index, pod in enumerate(pods):
        if skip(pod):
            continue
        entries = []
        for number in range(rng.choice((0, 1, 1, 1, 2))):
            entry, found = _entry(rng, f"{label}-p{index}-c{number}", f"c{number}", named, namespace)
            entries.append(entry)
            objects.extend(found)
        claims = [o["metadata"]["name"] for o in objects if o["kind"] == "ResourceClaim"]
        named.extend(name for name in claims if name not in named)
        if not entries:
            continue
        pod["spec"]["resourceClaims"] = entries
        if rng.random() < 0.5:
            pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": entry["name"]} for entry in entries]
    return objects


DELETING = "gpusched.io/delete-before-pods"  # a claim the harness deletes at once: its finalizer keeps it, deleting
FINALIZER = "gpusched.io/hold"


def _entry(rng: random.Random, name: str, entry: str, named: list[str], namespace: str) -> tuple[dict, list[dict]]:
    """One spec.resourceClaims entry and the objects it needs; now and then a claim or template that does not exist,
    or a claim being deleted (PreEnqueue then holds the pod: the scheduler never tries it)."""
    draw = rng.random()
    if draw > 0.97:
        return {"name": entry, rng.choice(("resourceClaimName", "resourceClaimTemplateName")): f"{name}-absent"}, []
    if draw > 0.94:
        spec = _claim_spec(rng)
        spec["devices"].pop("config", None)  # so that dropping the finalizer changes nothing else
        meta = {**_meta(name, namespace), "finalizers": [FINALIZER], "annotations": {DELETING: "true"}}
        return {"name": entry, "resourceClaimName": name}, [
            {"apiVersion": API_VERSION, "kind": "ResourceClaim", "metadata": meta, "spec": spec}
        ]
    if draw < 0.12 and named:
        return {"name": entry, "resourceClaimName": rng.choice(named)}, []  # shared with an earlier pod
    if draw < 0.27:
        template = {"apiVersion": API_VERSION, "kind": "ResourceClaimTemplate", "metadata": _meta(name, namespace),
                    "spec": {"spec": _claim_spec(rng)}}  # fmt: skip
        return {"name": entry, "resourceClaimTemplateName": name}, [template]
    claim = {"apiVersion": API_VERSION, "kind": "ResourceClaim", "metadata": _meta(name, namespace),
             "spec": _claim_spec(rng)}  # fmt: skip
    return {"name": entry, "resourceClaimName": name}, [claim]


def for_release(objects: list[dict], version: tuple[int, ...]) -> list[dict]:
    """The objects as drawn, less what the release's API server drops or refuses with its default gates: before
    DRADeviceTaintRules resource.k8s.io/v1 serves no DeviceTaintRules (a user cannot create one); without
    DRAConsumableCapacity it drops allowMultipleAllocations, requestPolicy and capacity requests, and drops
    `distinctAttribute`, leaving a constraint with neither attribute invalid (so it is left out).
    Other fields of a feature that is off are dropped silently, and the play reads back what the server kept."""
    kept = copy.deepcopy(objects)
    if not features.enabled("DRADeviceTaintRules", version):
        kept = [obj for obj in kept if obj["kind"] != "DeviceTaintRule"]
    if features.enabled("DRAConsumableCapacity", version):
        return kept
    for obj in kept:
        if obj["kind"] == "ResourceSlice":
            obj["metadata"].pop("annotations", None)  # no policy left to refuse
            for device in obj["spec"].get("devices", []):
                device.pop("allowMultipleAllocations", None)
                for capacity in device.get("capacity", {}).values():
                    capacity.pop("requestPolicy", None)
            continue
        spec = obj["spec"]["spec"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]
        devices = spec.get("devices", {}) if obj["kind"] in ("ResourceClaim", "ResourceClaimTemplate") else {}
        for request in devices.get("requests", []):
            for alternative in [request.get("exactly") or {}, *request.get("firstAvailable", [])]:
                alternative.pop("capacity", None)
        constraints = [c for c in devices.get("constraints", []) if "distinctAttribute" not in c]
        if constraints:
            devices["constraints"] = constraints
        else:
            devices.pop("constraints", None)
    return kept
