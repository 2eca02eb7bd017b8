"""Configuration a user can apply, built from the same model as the command that motivates it.

- `scheduler_config`: the KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) whose profile ranks nodes as
  `place --view extended --gpu-weight N` does (`place --emit-scheduler-config`).
- `kueue_setup`: Kueue v1beta1 ResourceFlavors (one per GPU product), a ClusterQueue sized from the nodes'
  allocatable and a LocalQueue, with the label a Job needs to join it (`gang --emit-kueue`).
- `mig_parted_file`: the mig-parted config of a MIG plan with the node labels that select it (`mig plan --emit`).

Each returns an `Emitted`: the objects, the comment lines that say how to apply them, and the YAML text. Every
refusal is a ValueError naming the option, so the CLI exits 2 before anything is written.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import yaml
from pydantic import BaseModel, Field

from .models.cluster import Cluster, Node
from .models.quantity import format_quantity
from .models.workload import Job
from .planner.state import GPU_RESOURCE, ClusterState, advertised, mig_resource

if TYPE_CHECKING:  # the MIG planner loads CP-SAT: only `mig plan` imports it
    from .planner.optimize.mig import MigPlan

__all__ = [
    "DEFAULT_GPU_WEIGHT",
    "QUEUE_LABEL",
    "Emitted",
    "Flavor",
    "JobAdmission",
    "KueueSetup",
    "SchedulerConfig",
    "kueue_setup",
    "mig_parted_file",
    "scheduler_config",
]

DEFAULT_GPU_WEIGHT = 10  # the seed's gpu-binpack profile
MAX_WEIGHT = 100  # kube-scheduler rejects resource weights outside (0, 100]
STRATEGIES = {"binpack": "MostAllocated", "spread": "LeastAllocated"}
# Score plugins on by default whose scores differ between nodes although gpusched does not model them: off, so that
# the profile ranks exactly as the simulation does. Preference-driven scorers (taints, affinity) stay on.
UNMODELLED_SCORES = ("NodeResourcesBalancedAllocation", "ImageLocality")

KUEUE_API = "kueue.x-k8s.io/v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MODEL_LABEL = "gpusched.io/gpu-model"  # for nodes without a product label: the label to add, printed
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Emitted(BaseModel):
    """Objects to apply and the comment lines that head the file; `text()` is what gets written."""

    comments: list[str]
    documents: list[dict]

    def text(self) -> str:
        """The file: comment lines, then the objects (scalar lists and maps inline, as kubectl users read them)."""
        head = "".join(f"# {line}\n" for line in self.comments)
        return head + yaml.safe_dump_all(self.documents, sort_keys=False, default_flow_style=None, width=1000)


# --- kube-scheduler ---------------------------------------------------------------------------------------------


class SchedulerConfig(Emitted):
    scheduler_name: str = Field(description="the profile's name: pods choose it with spec.schedulerName")
    strategy: str = Field(description="NodeResourcesFit scoringStrategy.type")
    resources: dict[str, int] = Field(description="resource -> weight in the score")


def gpu_resources(cluster: Cluster) -> list[str]:
    """nvidia.com/gpu and every other GPU resource a node advertises (nvidia.com/mig-* under the mixed strategy)."""
    state = ClusterState.from_cluster(cluster)
    found = {name for node in state.nodes for name in advertised(node)}
    return [GPU_RESOURCE, *sorted(found - {GPU_RESOURCE})]


def scheduler_config(cluster: Cluster, policy: str, gpu_weight: int | None) -> SchedulerConfig:
    """The profile that scores as `place --view extended --policy P --gpu-weight N`: NodeResourcesFit alone.

    A pod requests one GPU resource and kube-scheduler leaves the others out of its score, so every GPU resource the
    cluster advertises gets the weight; 0 leaves GPUs out (an explicit 0 would be defaulted to 1 by the scheduler).
    """
    option = "--emit-scheduler-config"
    if policy not in STRATEGIES:
        raise ValueError(f"{option}: kube-scheduler cannot score NVLink islands (--policy {policy}); "
                         "use --policy binpack or spread")  # fmt: skip
    weight = DEFAULT_GPU_WEIGHT if gpu_weight is None else gpu_weight
    if weight > MAX_WEIGHT:
        raise ValueError(f"{option}: kube-scheduler accepts resource weights 1 to {MAX_WEIGHT}, got --gpu-weight {weight}")
    resources = {**dict.fromkeys(gpu_resources(cluster) if weight else [], weight), "cpu": 1, "memory": 1}
    name = f"gpu-{policy}"
    strategy = STRATEGIES[policy]
    profile = {
        "schedulerName": name,
        "plugins": {"score": {"disabled": [{"name": plugin} for plugin in UNMODELLED_SCORES]}},
        "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                "type": strategy, "resources": [{"name": r, "weight": w} for r, w in resources.items()]}}},
            {"name": "PodTopologySpread", "args": {"defaultingType": "List"}},  # no implicit spreading
        ],
    }  # fmt: skip
    document = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,  # score every feasible node, as gpusched does
        "leaderElection": {"leaderElect": True, "resourceName": name, "resourceNamespace": "kube-system"},
        "profiles": [profile],
    }
    gpus = [r for r in resources if r not in ("cpu", "memory")]
    comments = [
        f"Profile {name}: NodeResourcesFit {strategy}; it ranks nodes as",
        f"`gpusched place CLUSTER --view extended --policy {policy} --gpu-weight {weight}` does",
        f"(weight {weight}: {', '.join(gpus)}; weight 1: cpu, memory)." if gpus else "(weight 1: cpu, memory).",
        f"Pods choose it with spec.schedulerName: {name}.",
        f"Run it as a second scheduler (`kube-scheduler --config FILE`; its own lease, {name}),",
        "or copy the profile into the profiles of your kube-scheduler's configuration.",
        f"Not scored: {', '.join(UNMODELLED_SCORES)}; PodTopologySpread adds no default constraints;",
        "every feasible node is scored (percentageOfNodesToScore: 100).",
    ]
    return SchedulerConfig(comments=comments, documents=[document], scheduler_name=name, strategy=strategy,
                           resources=resources)  # fmt: skip


# --- Kueue ------------------------------------------------------------------------------------------------------


class Flavor(BaseModel):
    name: str
    node_labels: dict[str, str]
    nodes: list[str]
    models: list[str]
    quota: dict[str, str] = Field(description="resource -> nominalQuota: the sum of the nodes' allocatable")


class JobAdmission(BaseModel):
    job: str
    requests: dict[str, str] = Field(description="the whole job: pods x per-pod requests")
    flavors: list[str] = Field(description="flavors whose quota holds the whole job; empty: never admitted")
    reason: str | None = Field(None, description="why no flavor admits it")


class KueueSetup(Emitted):
    cluster_queue: str
    local_queue: str
    namespace: str
    label: dict[str, str] = Field(description="the label each Job (JobSet, training job) needs to join the queue")
    covered: list[str] = Field(description="the ClusterQueue's coveredResources")
    flavors: list[Flavor]
    node_labels: dict[str, dict[str, str]] = Field(description="labels to add to nodes that have no product label")
    jobs: list[JobAdmission]
    warnings: list[str] = Field(description="what keeps the queue from admitting some jobs")


def _check_name(option: str, value: str, pattern: re.Pattern[str], limit: int) -> None:
    """Kueue refuses object names that are not DNS names: say so before anything is written."""
    if len(value) > limit or not pattern.match(value):
        raise ValueError(f"{option}: {value!r} is not a valid name (lower-case letters, digits and '-', "
                         f"at most {limit} characters)")  # fmt: skip


def _flavor_name(value: str, taken: set[str]) -> str:
    """A product label or model as a ResourceFlavor name: lower case, other characters as '-', made unique."""
    base = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-") or "gpu"
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    return name


def _group(nodes: list[Node]) -> dict[tuple[str, str], list[Node]]:
    """GPU nodes by (label, value): their product label, else their model under gpusched's label."""
    groups: dict[tuple[str, str], list[Node]] = {}
    for node in nodes:
        assert node.gpu is not None
        product = node.labels.get(PRODUCT_LABEL)
        key = (PRODUCT_LABEL, product) if product else (MODEL_LABEL, node.gpu.model)
        groups.setdefault(key, []).append(node)
    return groups


def _covered(nodes: list[Node], gpu_names: list[str]) -> list[str]:
    """cpu and memory when every GPU node models them (Kueue needs a quota for each one a job requests)."""
    host = [name for name in ("cpu", "memory") if all(getattr(n, name) is not None for n in nodes)]
    return host + gpu_names


def _quota(nodes: list[Node], state: ClusterState, covered: list[str]) -> dict[str, int]:
    """The sum of the nodes' allocatable per covered resource (cpu in millicores, memory in bytes)."""
    total: Counter[str] = Counter()
    for node in nodes:
        total["cpu"] += node.cpu_milli or 0
        total["memory"] += node.memory_bytes or 0
        total.update(advertised(state.node(node.name)))
    return {name: total[name] for name in covered}


def _job_requests(job: Job) -> dict[str, int]:
    """What the whole job asks of the quota (Kueue admits all its pods at once): pods x per-pod requests."""
    resource = mig_resource(job.mig_profile) if job.mig_profile else GPU_RESOURCE
    per_pod = {"cpu": job.cpu_milli, "memory": job.memory_bytes, resource: job.gpus_per_pod}
    return {name: amount * job.pods for name, amount in per_pod.items() if amount}


def _admission(job: Job, flavors: list[Flavor], quotas: dict[str, dict[str, int]]) -> JobAdmission:
    """Kueue admits a job's pods under one flavor: the flavors whose quota holds all of it (and its GPU model)."""
    wanted = _job_requests(job)
    requests = {name: format_quantity(name, amount) for name, amount in wanted.items()}
    uncovered = [name for name in wanted if any(name not in quota for quota in quotas.values())]
    models = [flavor for flavor in flavors if job.model is None or job.model in flavor.models]
    fits = [] if uncovered else [
        f.name for f in models if all(amount <= quotas[f.name][name] for name, amount in wanted.items())
    ]  # fmt: skip
    if uncovered:
        reason = f"the ClusterQueue does not cover {', '.join(uncovered)} (not modelled on the nodes)"
    elif not models:
        reason = f"no flavor has GPU model {job.model}: Kueue never admits it"
    elif not fits:
        reason = f"no flavor's quota holds all of it ({_listed(requests)}): Kueue never admits it"
    else:
        reason = None
    return JobAdmission(job=job.name, requests=requests, flavors=fits, reason=reason)


def _listed(amounts: dict[str, str]) -> str:
    """`nvidia.com/gpu 16, cpu 128`: amounts as a message names them."""
    return ", ".join(f"{name} {amount}" for name, amount in amounts.items())


def kueue_setup(cluster: Cluster, jobs: list[Job], queue: str, namespace: str) -> KueueSetup:
    """ResourceFlavors per GPU product, one ClusterQueue with every flavor's whole allocatable, one LocalQueue."""
    _check_name("--queue", queue, _DNS_SUBDOMAIN, 253)
    _check_name("--namespace", namespace, _DNS_LABEL, 63)
    gpu_nodes = [node for node in cluster.nodes if node.gpu is not None and node.gpu.count]
    if not gpu_nodes:
        raise ValueError("--emit-kueue: the cluster has no GPU nodes, so there is no ResourceFlavor to make")
    state = ClusterState.from_cluster(cluster)
    covered = _covered(gpu_nodes, gpu_resources(cluster))
    flavors: list[Flavor] = []
    quotas: dict[str, dict[str, int]] = {}
    for (label, value), nodes in _group(gpu_nodes).items():
        name = _flavor_name(value, set(quotas))
        quotas[name] = _quota(nodes, state, covered)
        flavors.append(Flavor(
            name=name, node_labels={label: value}, nodes=[n.name for n in nodes],
            models=sorted({n.gpu.model for n in nodes if n.gpu}),
            quota={resource: format_quantity(resource, amount) for resource, amount in quotas[name].items()},
        ))  # fmt: skip
    documents = [
        *({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": f.name},
           "spec": {"nodeLabels": f.node_labels}} for f in flavors),
        {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": queue},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": covered, "flavors": [
             {"name": f.name, "resources": [{"name": r, "nominalQuota": q} for r, q in f.quota.items()]}
             for f in flavors]}]}},
        {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": queue, "namespace": namespace},
         "spec": {"clusterQueue": queue}},
    ]  # fmt: skip
    to_label = {n.name: {MODEL_LABEL: n.gpu.model} for n in gpu_nodes if n.gpu and PRODUCT_LABEL not in n.labels}
    uncovered = [name for name in ("cpu", "memory") if name not in covered]
    warnings = [(f"{' and '.join(uncovered)} not covered (not modelled on every GPU node): Kueue admits no job "
                 "that requests them unless its configuration excludes them")] if uncovered else []  # fmt: skip
    setup = KueueSetup(
        comments=[], documents=documents, cluster_queue=queue, local_queue=queue, namespace=namespace,
        label={QUEUE_LABEL: queue}, covered=covered, flavors=flavors, node_labels=to_label,
        jobs=[_admission(job, flavors, quotas) for job in jobs], warnings=warnings,
    )  # fmt: skip
    setup.comments = _kueue_comments(setup)
    return setup


def _kueue_comments(setup: KueueSetup) -> list[str]:
    lines = [
        (f"Kueue ({KUEUE_API}): {len(setup.flavors)} ResourceFlavor(s), ClusterQueue {setup.cluster_queue} "
         f"(quota: the flavors' whole allocatable), LocalQueue {setup.namespace}/{setup.local_queue}."),
        (f"A Job (JobSet, training job) in namespace {setup.namespace} joins with the label "
         f"{QUEUE_LABEL}: {setup.local_queue}."),
    ]
    lines += setup.warnings
    for node, labels in setup.node_labels.items():
        lines.append(f"kubectl label node {node} {' '.join(f'{key}={value}' for key, value in labels.items())}")
    return lines


# --- mig-parted -------------------------------------------------------------------------------------------------


def mig_parted_file(plan: MigPlan) -> Emitted | None:
    """The plan's mig-parted config (version v1, mig-configs) headed by the labels that select it; None: no change."""
    if not plan.labels:
        return None
    drain = sorted({holder for change in plan.changes for holder in change.holders})
    comments = [
        "mig-parted config (nvidia-mig-parted apply -f FILE -c NAME, or the GPU Operator MIG manager's ConfigMap).",
        "The MIG manager applies a config when a node is labelled with its name:",
        *(f"kubectl label node {node} nvidia.com/mig.config={name} --overwrite" for node, name in plan.labels.items()),
    ]
    if drain:
        comments.append(f"Drain first: mig-manager re-creates every instance of a GPU it reconfigures ({', '.join(drain)}).")
    return Emitted(comments=comments, documents=[plan.mig_parted])
