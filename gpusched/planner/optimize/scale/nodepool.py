"""The Karpenter NodePool (karpenter.sh/v1) that asks for what a scale-up plan chose (`scale up --emit karpenter`):
requirements narrowed to the instance types, capacity types and zones of the plan's nodes, limits at what the pool
holds now plus the plan's nodes, the pool's labels and taints on every node."""

from __future__ import annotations

from ....errors import InputError
from ....models.cluster import Cluster
from ....models.offers import CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL, ZONE, Offers
from ....models.quantity import format_quantity
from ...emit import Emitted
from .report import ScaleUpReport

__all__ = ["KARPENTER_API", "DEFAULT_NODE_CLASS", "nodepool"]

KARPENTER_API = "karpenter.sh/v1"
DEFAULT_NODE_CLASS = "karpenter.k8s.aws/EC2NodeClass/default"


def nodepool(report: ScaleUpReport, offers: Offers, cluster: Cluster, node_class: str = DEFAULT_NODE_CLASS,
             source: str = "node class") -> Emitted:  # fmt: skip
    group, _, rest = node_class.rpartition("/")
    group, _, kind = group.rpartition("/")
    if not (group and kind and rest):
        raise InputError(source, f"expected GROUP/KIND/NAME (e.g. {DEFAULT_NODE_CLASS}), got {node_class!r}")
    if not report.new_nodes:
        raise InputError("NodePool", "the plan adds no node, there is no NodePool to ask for")
    kinds = {kind.name: kind for kind in offers.instance_types}
    chosen = report.new_nodes
    own = [node for node in cluster.nodes if node.labels.get(NODEPOOL) == offers.nodepool]
    cpu = sum(n.cpu_milli or 0 for n in own) + sum(kinds[n.instance_type].cpu_milli for n in chosen)
    memory = sum(n.memory_bytes or 0 for n in own) + sum(kinds[n.instance_type].memory_bytes for n in chosen)
    gpus = sum(n.gpu.count for n in own if n.gpu) + sum(_gpus(kinds[n.instance_type].gpu) for n in chosen)
    requirements = [
        {"key": key, "operator": "In", "values": sorted({getattr(n, field) for n in chosen})}
        for key, field in ((INSTANCE_TYPE, "instance_type"), (CAPACITY_TYPE, "capacity_type"), (ZONE, "zone"))
    ]
    spec: dict = {"requirements": requirements}
    if offers.taints:
        spec["taints"] = [t.model_dump() for t in offers.taints]
    spec["nodeClassRef"] = {"group": group, "kind": kind, "name": rest}
    template: dict = {"spec": spec}
    if offers.labels:
        template = {"metadata": {"labels": dict(offers.labels)}, "spec": spec}
    document = {
        "apiVersion": KARPENTER_API,
        "kind": "NodePool",
        "metadata": {"name": offers.nodepool},
        "spec": {
            "template": template,
            "limits": {
                "cpu": format_quantity("cpu", cpu),
                "memory": format_quantity("memory", memory),
                "nvidia.com/gpu": str(gpus),
            },
        },
    }
    counts: dict[str, int] = {}
    for node in chosen:
        counts[node.offering] = counts.get(node.offering, 0) + 1
    comments = [
        f"The NodePool {offers.nodepool} asking for the plan's {len(chosen)} new node(s), "
        f"{report.cost_per_hour:g} per hour ({report.status}): "
        + ", ".join(f"{n} x {offering}" for offering, n in sorted(counts.items())),
        "Apply: kubectl apply -f FILE. Karpenter packs pods its own way; the limits stop it past the plan's size.",
    ]
    mig = sorted({f"{node.instance_type}: {layout}" for node in chosen if (layout := _layout(node.mig))})
    if mig:
        comments.append("MIG layouts the plan gives new nodes (mig-manager's nvidia.com/mig.config): " + "; ".join(mig))
    return Emitted(comments=comments, documents=[document])


def _gpus(gpu) -> int:
    return 0 if gpu is None else gpu.count


def _layout(mig: dict[str, int]) -> str:
    return ", ".join(f"{count} GPU(s) as {profile}" for profile, count in sorted(mig.items()))
