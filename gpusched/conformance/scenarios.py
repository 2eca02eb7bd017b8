"""Seeded random scenarios for differential testing: Node, Pod and DRA manifests exactly as a user would create them.

Nodes carry GPU extended resources (now and then only in capacity, before the kubelet copies them), cpu, memory,
ephemeral-storage and pod limits, labels, taints and cordons; pods carry requests and limits in several
spellings, init containers and sidecars, pod-level requests, a RuntimeClass overhead, tolerations, nodeSelectors,
required node affinity (including `metadata.name` matchFields, conflicting ones, and Gt/Lt values Go's ParseInt
refuses), host ports, scheduling gates, fractional quantities whose exact sum matters, and priority classes. Some
pods carry a value the API server refuses (then gpusched must refuse the same manifest). Three kinds of scenario:

- `plain`: one priority class, which never preempts;
- `dra` (a third of them): the NVIDIA DRA driver's DeviceClasses and ResourceSlices, and pods with ResourceClaims
  (see dra.py);
- `preemption`: classes that preempt lower priorities, and pods with the default 30 s grace period, so that a
  victim stays Terminating until the harness, playing the kubelet, deletes it (a grace period of 0 would let the
  scheduler delete it at once, and the preemptor could bind before its Pending message is seen). Some later pods
  that cannot preempt are labelled to arrive during a preemption: while the victims terminate and the preemptor
  is only nominated, which the scheduler counts against them. Most carry PodDisruptionBudgets over the pods'
  `app` labels, whose status (disruptionsAllowed, disruptedPods) the harness writes, as no disruption controller
  runs.

Outside DRA scenarios pods carry `app`/`tier` labels and now and then required and preferred pod affinity and
anti-affinity (selectors with matchLabels and every operator, namespaces, namespaceSelectors, matchLabelKeys and
mismatchLabelKeys, topology keys some nodes lack) and topologySpreadConstraints (maxSkew, minDomains, both policies,
matchLabelKeys, an empty or absent selector, ScheduleAnyway); in two scenarios of five 2.5 times as often, with
zones on most nodes.

The same (seed, index) gives the same scenario.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, Field

from ..planner.scheduler.framework import NEWEST
from . import dra

__all__ = [
    "IMAGE",
    "SCENARIO_LABEL",
    "DURING_PREEMPTION",
    "PRIORITY_CLASSES",
    "RUNTIME_CLASS",
    "REFUSED",
    "ConformanceScenario",
    "generate",
    "pdb_status",
]

IMAGE = "registry.k8s.io/pause:3.10"
SCENARIO_LABEL = "gpusched.io/scenario"
DURING_PREEMPTION = "gpusched.io/arrives-during-preemption"  # created while its predecessor's victims terminate
HIGH, BATCH, URGENT = "gpusched-high", "gpusched-batch", "gpusched-urgent"
PRIORITY_CLASSES = tuple(
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
     "preemptionPolicy": policy}
    for name, value, policy in ((HIGH, 1000, "Never"), (BATCH, 100, "PreemptLowerPriority"),
                                (URGENT, 2000, "PreemptLowerPriority"))
)  # fmt: skip
RUNTIME_CLASS: dict = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "gpusched-overhead"},
    "handler": "runc",
    "overhead": {"podFixed": {"cpu": "250m", "memory": "128Mi"}},
}
GPUS = ("example.com/gpu", "nvidia.com/gpu")
# In DRA scenarios a DeviceClass may serve nvidia.com/gpu, and any class its deviceclass.resource.kubernetes.io name
DRA_GPUS = (
    "nvidia.com/gpu",
    "nvidia.com/gpu",
    f"deviceclass.resource.kubernetes.io/{dra.GPU_CLASS}",
    "example.com/gpu",
)
MODELS = ("a100", "h100", "l4")
ZONES = ("a", "b")
TAINTS = (
    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
    {"key": "spot", "effect": "PreferNoSchedule"},
    {"key": "team", "value": "research", "effect": "NoSchedule"},
)
TOLERATIONS = (
    {"key": "gpu", "operator": "Exists"},
    {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"key": "gpu", "value": "false", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
    {"key": "team", "operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
CPUS = ("100m", "250m", "500m", "1", "1500m", "2", "3", "0.0001", "1.0001m")
MEMORIES = ("64Mi", "256Mi", "1Gi", "1536Mi", "4Gi", "0.1Gi", "0.1Gi", "1.5")
TIGHT_MEMORY = "429496730"  # ceil(0.4Gi): four 0.1Gi containers fit only when summed exactly, then rounded once
COUNTS = ("1", "2", "4", "8", "007", "1_000", "9223372036854775807", "9223372036854775808", "")  # gpu.count labels
BOUNDS = ("1", "2", "4", "8", "007", "1_000", "9223372036854775807", "9223372036854775808", "0x10", "abc")
REFUSED_BOUNDS = ("+4", "-1", " 4", "٣")  # not label values: the API server refuses the pod
HOST_IPS = ("", "", "127.0.0.1", "10.0.0.1", "0.0.0.0")
GATE = "gpusched.io/hold"
REFUSED = dra.REFUSED  # annotates a pod drawn with a value the API server refuses (for the offline tests)


class ConformanceScenario(BaseModel):
    seed: int
    index: int
    kind: str = Field("plain", description="plain, dra or preemption")
    nodes: list[dict] = Field(description="Node manifests, status included")
    pods: list[dict] = Field(description="Pod manifests, created one at a time in this order")
    objects: list[dict] = Field(default_factory=list, description="DRA objects, created before the nodes, in order")
    pdbs: list[dict] = Field(default_factory=list, description="PodDisruptionBudgets with the status the harness sets")

    @property
    def label(self) -> str:
        return f"s{self.seed}-{self.index}"

    def without_node(self, index: int) -> ConformanceScenario:
        """The scenario less one node and the ResourceSlices published for it."""
        name = self.nodes[index]["metadata"]["name"]
        objects = [obj for obj in self.objects if obj["spec"].get("nodeName") != name]
        return self.model_copy(update={"nodes": self.nodes[:index] + self.nodes[index + 1 :], "objects": objects})

    def without_pod(self, index: int) -> ConformanceScenario:
        """The scenario less one pod and the claims and templates no remaining pod names."""
        pods = self.pods[:index] + self.pods[index + 1 :]
        named = {entry.get("resourceClaimName") or entry.get("resourceClaimTemplateName")
                 for pod in pods for entry in pod["spec"].get("resourceClaims", [])}  # fmt: skip
        objects = [
            obj
            for obj in self.objects
            if obj["kind"] not in ("ResourceClaim", "ResourceClaimTemplate") or obj["metadata"]["name"] in named
        ]
        return self.model_copy(update={"pods": pods, "objects": objects})


APPS = ("web", "db", "train")
TIERS = ("a", "b")
TOPOLOGY_KEYS = ("kubernetes.io/hostname", "zone", "gpu.model", "rack")  # rack: on no node


def _labels(rng: random.Random, name: str, scenario: str, dense: bool = False) -> dict[str, str]:
    labels = {"kubernetes.io/hostname": name, SCENARIO_LABEL: scenario}
    if rng.random() < 0.7:
        labels["gpu.model"] = rng.choice(MODELS)
    if rng.random() < (0.9 if dense else 0.5):
        labels["zone"] = rng.choice(ZONES)
    if rng.random() < 0.5:
        labels["gpu.count"] = rng.choice(COUNTS)
    return labels


def _node(rng: random.Random, name: str, scenario: str, kind: str, dense: bool = False) -> dict:
    """A node as a kubelet registers it; in DRA and preemption scenarios rarely tainted or cordoned, so the claims
    get judged and the nodes fill up."""
    allocatable = {
        "cpu": rng.choice(("2", "4", "8", "3500m")),
        "memory": rng.choice(("4Gi", "8Gi", "16Gi", "2000Mi", TIGHT_MEMORY)),
        "pods": str(rng.choice((1, 2, 3, 110, 110, 110))),
    }
    if rng.random() < 0.3:
        allocatable["ephemeral-storage"] = rng.choice(("10Gi", "100Gi"))
    capacity_only: dict[str, str] = {}  # a device plugin registered, the kubelet has not copied it to allocatable yet
    full = kind == "preemption"  # every node offers GPUs, and enough of them to share
    for gpu, chance in zip(GPUS, (1.0 if full else 0.85, 0.35), strict=True):
        if rng.random() < chance:
            target = capacity_only if rng.random() < 0.08 and not full else allocatable
            target[gpu] = str(rng.choice((2, 4, 8, 8) if full else (0, 1, 2, 4, 8)))
    spec: dict = {}
    calm = kind != "plain"
    taints = rng.sample(TAINTS, k=rng.choice((0,) * 9 + (1,) if calm else (0, 0, 0, 0, 0, 1, 1, 2)))
    if taints:
        spec["taints"] = taints
    if rng.random() < (0.03 if calm else 0.1):
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": _labels(rng, name, scenario, dense)},
        "spec": spec,
        "status": {"capacity": {**allocatable, **capacity_only}, "allocatable": allocatable},
    }


def _resources(rng: random.Random, gpu_chance: float, light: tuple[int, ...] = (), names: tuple[str, ...] = ()) -> dict:
    """Requests and limits in the spellings users write: limits only, requests == limits, cpu as 1 or 1000m.
    `light`: small cpu and memory, no ephemeral storage, GPU counts from these: pods nodes fit until full."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if rng.random() < 0.7:
        requests["cpu"] = rng.choice(CPUS[:4] if light else CPUS)
    if rng.random() < 0.6:
        requests["memory"] = rng.choice(MEMORIES[:3] if light else MEMORIES)
    if rng.random() < 0.1 and not light:
        requests["ephemeral-storage"] = rng.choice(("1Gi", "20Gi"))
    if rng.random() < gpu_chance:
        counts = light or (0, 1, 1, 2, 2, 3, 4, 8)
        gpu, count = rng.choice(names or GPUS[:1] * 4 + GPUS[1:]), str(rng.choice(counts))
        limits[gpu] = count
        if rng.random() < 0.5:
            requests[gpu] = count
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources


def _containers(rng: random.Random, prefix: str, count: int, gpu_chance: float, light: tuple[int, ...] = (),
                names: tuple[str, ...] = ()) -> list[dict]:  # fmt: skip
    return [
        {"name": f"{prefix}{i}", "image": IMAGE, "resources": _resources(rng, gpu_chance, light, names)}
        for i in range(count)
    ]


def _init_containers(rng: random.Random) -> list[dict]:
    found = _containers(rng, "init", rng.choice((1, 1, 2)), 0.5)
    for container in found:
        if rng.random() < 0.4:
            container["restartPolicy"] = "Always"  # a sidecar: counted with the main containers
    return found


def _affinity(rng: random.Random, names: list[str]) -> dict:
    """Required node affinity: terms ORed, expressions ANDed; sometimes `metadata.name` matchFields."""
    terms: list[dict] = []
    for _ in range(rng.choice((1, 1, 2))):
        if rng.random() < 0.2:
            # one value each (validation); sometimes no such node, sometimes two that conflict (the PreFilter fails)
            pinned = rng.sample([*names, "elsewhere"], k=rng.choice((1, 1, 1, 2)))
            fields = [{"key": "metadata.name", "operator": "In", "values": [name]} for name in pinned]
            terms.append({"matchFields": fields})
            continue
        bound = rng.choice(BOUNDS) if rng.random() < 0.97 else rng.choice(REFUSED_BOUNDS)
        expression = rng.choice(
            (
                {"key": "gpu.model", "operator": "In", "values": rng.sample(MODELS, k=rng.choice((1, 2)))},
                {"key": "gpu.model", "operator": "NotIn", "values": [rng.choice(MODELS)]},
                {"key": "zone", "operator": "Exists"},
                {"key": "zone", "operator": "DoesNotExist"},
                {"key": "gpu.count", "operator": "Gt", "values": [bound]},
                {"key": "gpu.count", "operator": "Lt", "values": [bound]},
            )
        )
        terms.append({"matchExpressions": [expression]})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def _pod(
    rng: random.Random,
    name: str,
    namespace: str,
    names: list[str],
    kind: str,
    late: bool,
    during: bool = False,
    dense: bool = False,
) -> dict:
    """A pod as users write it; in DRA and preemption scenarios node constraints are rarer, so that the claims get
    judged and pods pile up on the nodes. `late`: in the second half of the scenario; `during`: to arrive while
    its predecessor's preemption is under way (then it never preempts itself)."""
    narrow = 1.0 if kind == "plain" else 0.3  # scales the chances of what rules nodes out
    light = ((2, 4, 4, 8) if late else (1, 1, 2, 2)) if kind == "preemption" else ()  # the late preempt the early
    gpu_chance = {"plain": 0.7, "dra": 0.3, "preemption": 0.9}[kind]
    gpus = DRA_GPUS if kind == "dra" else ()
    count = rng.choice((1, 1, 1, 2) if light else (1, 1, 2))
    spec: dict = {"containers": _containers(rng, "main", count, gpu_chance, light, gpus)}
    if not light:
        spec["terminationGracePeriodSeconds"] = 0
    if rng.random() < 0.3 * narrow:
        spec["initContainers"] = _init_containers(rng)
    if rng.random() < 0.45:
        spec["tolerations"] = rng.sample(TOLERATIONS, k=rng.choice((1, 1, 2)))
    if rng.random() < 0.3 * narrow:
        key = rng.choice(("gpu.model", "zone"))
        spec["nodeSelector"] = {key: rng.choice(MODELS if key == "gpu.model" else ZONES)}
        if rng.random() < 0.03:
            spec["nodeSelector"][key] = "+" + spec["nodeSelector"][key]  # no label value: refused
    if rng.random() < 0.2 * narrow:
        spec["affinity"] = _affinity(rng, names)
    priority = rng.choice((None, HIGH)) if during else _priority(rng, kind, late)
    if priority:
        spec["priorityClassName"] = priority
    metadata: dict = {"name": name, "namespace": namespace}
    labels = _pod_labels(rng) if kind != "dra" else {}
    if during:
        labels[DURING_PREEMPTION] = "true"
    if labels:
        metadata["labels"] = labels
    if kind != "dra":
        _pod_rules(rng, spec, namespace, 2.5 if dense else 1.0)
    if rng.random() < 0.1:
        spec["runtimeClassName"] = RUNTIME_CLASS["metadata"]["name"]  # its overhead is added to the requests
    if rng.random() < 0.1:
        _pod_level(rng, spec)
    if rng.random() < 0.35 * narrow:
        _host_ports(rng, spec)
    if rng.random() < 0.04:
        spec["schedulingGates"] = [{"name": GATE}]
    refused = rng.random() < 0.04
    if refused:
        _refused(rng, spec)
    if refused or _refused_values(spec):
        metadata["annotations"] = {REFUSED: "true"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _pod_labels(rng: random.Random) -> dict[str, str]:
    labels = {}
    if rng.random() < 0.8:
        labels["app"] = rng.choice(APPS)
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(TIERS)
    return labels


def _selector(rng: random.Random, nil: bool = True) -> dict | None:
    """A label selector over `app` (and sometimes `tier`): matchLabels, each operator, `{}`, or absent."""
    pick = rng.random()
    if pick < 0.08 and nil:
        return None
    if pick < 0.15:
        return {}
    if pick < 0.6:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    expression = rng.choice(
        (
            {"key": "app", "operator": "In", "values": rng.sample(APPS, k=rng.choice((1, 2)))},
            {"key": "app", "operator": "NotIn", "values": [rng.choice(APPS)]},
            {"key": "app", "operator": "Exists"},
            {"key": "tier", "operator": "DoesNotExist"},
        )
    )
    return {"matchExpressions": [expression]}


def _namespace_selectors(namespace: str) -> tuple[dict, ...]:
    """namespaceSelectors on the name label and on the `team` label the differential's namespace carries (x)."""
    return (
        {},
        {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        {"matchLabels": {"team": "x"}},
        {"matchLabels": {"team": "y"}},
        {"matchExpressions": [{"key": "team", "operator": "In", "values": ["x", "z"]}]},
        {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]},
        {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
    )


def _term(rng: random.Random, namespace: str) -> dict:
    """A PodAffinityTerm; matchLabelKeys/mismatchLabelKeys name `tier`, which the selector never uses."""
    selector = _selector(rng)
    term: dict = {"topologyKey": rng.choice(TOPOLOGY_KEYS[:3] * 3 + TOPOLOGY_KEYS[3:])}
    if selector is not None:
        term["labelSelector"] = selector
        if "tier" not in str(selector) and rng.random() < 0.2:
            term[rng.choice(("matchLabelKeys", "mismatchLabelKeys"))] = ["tier"]
    pick = rng.random()
    if pick < 0.1:
        term["namespaces"] = [rng.choice((namespace, "elsewhere"))]
    elif pick < 0.2:
        term["namespaceSelector"] = rng.choice(_namespace_selectors(namespace))
    return term


def _pod_rules(rng: random.Random, spec: dict, namespace: str, scale: float) -> None:
    """Pod (anti-)affinity and topology spread, now and then (`scale` times more often in dense scenarios)."""
    affinity = spec.setdefault("affinity", {})
    for kind, chance in (("podAffinity", 0.12), ("podAntiAffinity", 0.2)):
        if rng.random() >= chance * scale:
            continue
        rules: dict = {}
        if rng.random() < 0.8:
            rules["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _term(rng, namespace) for _ in range(rng.choice((1, 1, 2)))
            ]
        if rng.random() < 0.4:
            rules["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng, namespace)}
            ]
        if rules:
            affinity[kind] = rules
    if not affinity:
        del spec["affinity"]
    if rng.random() < 0.25 * scale:
        keys = rng.sample(TOPOLOGY_KEYS, k=rng.choice((1, 1, 2)))  # (key, whenUnsatisfiable) pairs must differ
        spec["topologySpreadConstraints"] = [_spread(rng, key) for key in keys]


def _spread(rng: random.Random, key: str) -> dict:
    hard = rng.random() < 0.85
    constraint: dict = {
        "maxSkew": rng.choice((1, 1, 1, 2, 3)),
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
    }
    selector = _selector(rng)
    if selector is not None:
        constraint["labelSelector"] = selector
        if "tier" not in str(selector) and rng.random() < 0.2:
            constraint["matchLabelKeys"] = ["tier"]
    if hard and rng.random() < 0.25:
        constraint["minDomains"] = rng.choice((1, 2, 3, 5))
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if rng.random() < 0.2:
            constraint[policy] = rng.choice(("Honor", "Ignore"))
    return constraint


def _pdbs(rng: random.Random, namespace: str, label: str) -> list[dict]:
    """Budgets over `app` labels, each with the status the harness writes (disruptionsAllowed 0-2, sometimes a
    disrupted pod)."""
    found = []
    for i in range(rng.choice((0, 1, 1, 2, 3))):
        selector = _selector(rng, nil=False) if rng.random() < 0.3 else {"matchLabels": {"app": rng.choice(APPS)}}
        spec = {"selector": selector, "minAvailable": 1} if rng.random() < 0.5 else {"selector": selector,
                                                                                     "maxUnavailable": 1}  # fmt: skip
        status: dict = {"disruptionsAllowed": rng.choice((0, 0, 1, 1, 2))}
        if rng.random() < 0.15:
            status["disruptedPods"] = {f"{label}-p{rng.randint(0, 3)}": "2026-01-01T00:00:00Z"}
        found.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                      "metadata": {"name": f"{label}-b{i}", "namespace": namespace}, "spec": spec, "status": status})  # fmt: skip
    return found


def pdb_status(pdb: dict) -> dict:
    """The full status subresource for a generated budget (the API wants every counter)."""
    allowed = pdb["status"]["disruptionsAllowed"]
    return {"status": {"disruptionsAllowed": allowed, "currentHealthy": allowed + 1, "desiredHealthy": 1,
                       "expectedPods": allowed + 1, "observedGeneration": 1, **pdb["status"]}}  # fmt: skip


def _refused_values(spec: dict) -> bool:
    """A nodeSelector or affinity value drawn to be no label value."""
    required = spec.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = required["nodeSelectorTerms"] if required else []
    values = [v for term in terms for e in term.get("matchExpressions", []) for v in e.get("values", [])]
    values += list(spec.get("nodeSelector", {}).values())
    return any(value in REFUSED_BOUNDS or value.startswith("+") for value in values)


def _host_ports(rng: random.Random, spec: dict) -> None:
    """A host port on a main container or a sidecar (plain init containers' ports do not count)."""
    sidecars = [c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"]
    container = rng.choice([*spec["containers"], *sidecars])
    port: dict = {"containerPort": 8080, "hostPort": rng.choice((80, 80, 80, 8080))}
    if rng.random() < 0.3:
        port["protocol"] = rng.choice(("TCP", "UDP"))
    if ip := rng.choice(HOST_IPS):
        port["hostIP"] = ip
    container["ports"] = [port]


def _refused(rng: random.Random, spec: dict) -> None:
    """One value the API server refuses: a negative, malformed or fractional-extended quantity, a request above its
    limit, a host port out of range or repeated, a gate that is no qualified name, a toleration the API's rules
    forbid, an empty selector term list."""
    container = spec["containers"][0]
    resources = container["resources"]
    choice = rng.randrange(9)
    if choice == 0:
        resources.setdefault("requests", {})["cpu"] = "-1"
    elif choice == 1:
        resources.setdefault("requests", {})["memory"] = "1e3Ki"
    elif choice == 2:
        resources["limits"] = {**resources.get("limits", {}), "example.com/gpu": "0.5"}
    elif choice == 3:
        resources["limits"] = {**resources.get("limits", {}), "cpu": "1"}
        resources.setdefault("requests", {})["cpu"] = "2"
    elif choice == 4:
        container["ports"] = [{"containerPort": 80, "hostPort": 70000}]
    elif choice == 5:
        container["ports"] = [{"containerPort": 80, "hostPort": 81}, {"containerPort": 90, "hostPort": 81}]
    elif choice == 6:
        spec["schedulingGates"] = [{"name": "-gate"}]
    elif choice == 7:
        spec["tolerations"] = [rng.choice(({"key": "gpu", "operator": "Exists", "value": "true"},
                                           {"operator": "Equal", "value": "x"},
                                           {"key": "gpu", "operator": "Exists", "tolerationSeconds": 5}))]  # fmt: skip
    else:
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
        }


def _pod_level(rng: random.Random, spec: dict) -> None:
    """Pod-level cpu/memory requests; the containers then leave theirs out (the API server wants pod >= sum)."""
    for container in [*spec["containers"], *spec.get("initContainers", [])]:
        requests = container["resources"].get("requests", {})
        for name in ("cpu", "memory"):
            requests.pop(name, None)
        if "requests" in container["resources"] and not requests:
            del container["resources"]["requests"]
    spec["resources"] = {"requests": {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORIES)}}


def _priority(rng: random.Random, kind: str, late: bool) -> str | None:
    """Most pods have none (priority 0); in preemption scenarios the later pods tend to preempt the earlier."""
    if kind != "preemption":
        return HIGH if rng.random() < 0.15 else None
    return rng.choice((BATCH, URGENT, URGENT, None) if late else (None, None, BATCH, HIGH))


def _kind(rng: random.Random) -> str:
    if rng.random() < 1 / 3:
        return "dra"
    return "preemption" if rng.random() < 0.3 else "plain"


def generate(seed: int, index: int, namespace: str, version: tuple[int, ...] = NEWEST) -> ConformanceScenario:
    """Scenario `index` of the run seeded `seed`: 1–4 nodes, 1–8 pods (DRA: 2–4 and 2–6); names unique to it.

    Every release draws the same scenario; `version` only leaves out what its API server refuses (dra.for_release)."""
    rng = random.Random(f"{seed}:{index}")
    label = f"s{seed}-{index}"
    kind = _kind(rng)
    dense = kind != "dra" and rng.random() < 0.4  # pod rules 2.5 times as often, zones on most nodes
    names = [f"{label}-n{i}" for i in range(rng.randint(2, 4) if kind == "dra" else rng.randint(1, 4))]
    nodes = [_node(rng, name, label, kind, dense) for name in names]
    count = rng.randint(2, 6) if kind == "dra" else rng.randint(1, 8)
    pods: list[dict] = []
    for i in range(count):
        after = pods[-1]["spec"].get("priorityClassName") if pods else None
        during = kind == "preemption" and after in (BATCH, URGENT) and rng.random() < 0.6
        pods.append(_pod(rng, f"{label}-p{i}", namespace, names, kind, 2 * i >= count, during, dense))
    objects = []
    if kind == "dra":
        classes = dra.classes(rng)
        mapped = {c["spec"]["extendedResourceName"] for c in classes if c["spec"].get("extendedResourceName")}
        plugins = {name for node in nodes for name, count in node["status"]["allocatable"].items() if count != "0"}
        skip = lambda pod: bool(_requested(pod) & mapped & plugins)  # noqa: E731
        published = dra.slices(rng, names)
        rules = dra.taint_rules(rng, published)
        objects = [*classes, *rules, *published, *dra.claims_for(rng, pods, label, namespace, skip)]
        objects = dra.for_release(objects, version)
    pdbs = _pdbs(rng, namespace, label) if kind == "preemption" else []
    return ConformanceScenario(seed=seed, index=index, kind=kind, nodes=nodes, pods=pods, objects=objects, pdbs=pdbs)


def _requested(pod: dict) -> set[str]:
    """Resource names the pod's containers ask for.

    Claims are kept away from pods asking for an extended resource a DeviceClass maps when a device plugin offers it
    somewhere: kube-scheduler 1.37.2 binds such a pod on a DRA-served node, but on a device-plugin node PreBind fails
    with `nil or empty request mappings, no update of pod ... ExtendedResourceClaimStatus` on every retry (its claim
    for extended resources gets an empty allocation there), a fault of the scheduler gpusched does not reproduce.
    """
    containers = [*pod["spec"]["containers"], *pod["spec"].get("initContainers", [])]
    return {name for c in containers for part in ("requests", "limits") for name in c["resources"].get(part, {})}
