"""Kueue v1beta1 ResourceFlavors (one per GPU product), a ClusterQueue sized from the nodes' allocatable and a
LocalQueue, with the label a Job needs to join it (`gang --emit-kueue`)."""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel, Field

from ...models.cluster import Cluster, Node
from ...models.quantity import format_quantity
from ...models.workload import Job
from ..state import GPU_RESOURCE, ClusterState, advertised, mig_resource
from .emitted import Emitted, gpu_resources

__all__ = ["QUEUE_LABEL", "Flavor", "JobAdmission", "KueueSetup", "kueue_setup"]

KUEUE_API = "kueue.x-k8s.io/v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MODEL_LABEL = "gpusched.io/gpu-model"  # for nodes without a product label: the label to add, printed
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


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
        (
            f"Kueue ({KUEUE_API}): {len(setup.flavors)} ResourceFlavor(s), ClusterQueue {setup.cluster_queue} "
            f"(quota: the flavors' whole allocatable), LocalQueue {setup.namespace}/{setup.local_queue}."
        ),
        (
            f"A Job (JobSet, training job) in namespace {setup.namespace} joins with the label "
            f"{QUEUE_LABEL}: {setup.local_queue}."
        ),
    ]
    lines += setup.warnings
    for node, labels in setup.node_labels.items():
        lines.append(f"kubectl label node {node} {' '.join(f'{key}={value}' for key, value in labels.items())}")
    return lines
