"""The NVIDIA mig-parted config of a MIG plan, built once here: the config and node labels the plan reports
(`mig_parted`), and the file `mig plan --emit mig-parted` writes, headed by the labels that select it
(`mig_parted_file`)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from ....models.cluster import Cluster, GpuBlock
from ....models.mig import profiles_for
from ...emit import Emitted
from .layouts import Layout, MigGpu, NewInstance, instances_after
from .report import MigPlan

__all__ = ["mig_parted", "mig_parted_file", "node_layouts"]


def node_layouts(
    block: GpuBlock, node: str, gpus: dict[str, MigGpu], layouts: dict[str, Layout]
) -> list[list[NewInstance] | None]:
    """Every GPU of the node after the plan: its instances, or None for MIG disabled."""
    result = []
    for index in range(block.count):
        gpu = gpus.get(f"{node}/{index}")
        if gpu is None:
            instances = [(m.profile, m.start, m.holder) for m in block.mig if m.gpu == index]
            result.append(sorted(instances, key=lambda i: i[1]) or None)
        else:
            result.append(instances_after(gpu, layouts.get(gpu.name, gpu.free)))
    return result


def mig_parted(cluster: Cluster, gpus: list[MigGpu], layouts: dict[str, Layout]) -> tuple[dict, dict[str, str]]:
    """One mig-parted config per distinct node layout (named by its content), and the label of each changed node."""
    by_name = {gpu.name: gpu for gpu in gpus}
    changed = {by_name[name].node for name in layouts}
    configs: dict[str, list[dict]] = {}
    labels: dict[str, str] = {}
    for node in cluster.nodes:
        if node.name not in changed or node.gpu is None:
            continue
        order = list(profiles_for(node.gpu.model, node.gpu.memory_gib))
        entries: dict[str, dict] = {}
        for index, instances in enumerate(node_layouts(node.gpu, node.name, by_name, layouts)):
            have = Counter(p for p, _, _ in instances or [])
            devices = {p: have[p] for p in order if have[p]}
            entry = {"mig-enabled": True, "mig-devices": devices} if instances else {"mig-enabled": False}
            key = json.dumps(entry, sort_keys=True)
            entries.setdefault(key, {"devices": [], **entry})["devices"].append(index)
        config = list(entries.values())
        name = "gpusched-" + hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:8]
        configs[name] = config
        labels[node.name] = name
    return {"version": "v1", "mig-configs": configs}, labels


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
        comments.append(
            f"Drain first: mig-manager re-creates every instance of a GPU it reconfigures ({', '.join(drain)})."
        )
    return Emitted(comments=comments, documents=[plan.mig_parted])
