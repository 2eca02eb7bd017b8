"""The KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) whose profile ranks nodes as
`place --view extended --gpu-weight N` does (`place --emit-scheduler-config`)."""

from __future__ import annotations

from pydantic import Field

from ...models.cluster import Cluster
from ..scheduler.names import (
    IMAGE_LOCALITY,
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NODE_RESOURCES_FIT,
    POD_TOPOLOGY_SPREAD,
)
from .emitted import Emitted, gpu_resources

__all__ = ["DEFAULT_GPU_WEIGHT", "SchedulerConfig", "scheduler_config"]

DEFAULT_GPU_WEIGHT = 10  # the seed's gpu-binpack profile
MAX_WEIGHT = 100  # kube-scheduler rejects resource weights outside (0, 100]
STRATEGIES = {"binpack": "MostAllocated", "spread": "LeastAllocated"}
# Score plugins on by default whose scores differ between nodes although gpusched does not model them: off, so that
# the profile ranks exactly as the simulation does. Preference-driven scorers (taints, affinity) stay on.
UNMODELLED_SCORES = (NODE_RESOURCES_BALANCED_ALLOCATION, IMAGE_LOCALITY)


class SchedulerConfig(Emitted):
    scheduler_name: str = Field(description="the profile's name: pods choose it with spec.schedulerName")
    strategy: str = Field(description="NodeResourcesFit scoringStrategy.type")
    resources: dict[str, int] = Field(description="resource -> weight in the score")


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
        raise ValueError(
            f"{option}: kube-scheduler accepts resource weights 1 to {MAX_WEIGHT}, got --gpu-weight {weight}"
        )
    resources = {**dict.fromkeys(gpu_resources(cluster) if weight else [], weight), "cpu": 1, "memory": 1}
    name = f"gpu-{policy}"
    strategy = STRATEGIES[policy]
    profile = {
        "schedulerName": name,
        "plugins": {"score": {"disabled": [{"name": plugin} for plugin in UNMODELLED_SCORES]}},
        "pluginConfig": [
            {"name": NODE_RESOURCES_FIT, "args": {"scoringStrategy": {
                "type": strategy, "resources": [{"name": r, "weight": w} for r, w in resources.items()]}}},
            {"name": POD_TOPOLOGY_SPREAD, "args": {"defaultingType": "List"}},  # no implicit spreading
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
        f"Profile {name}: {NODE_RESOURCES_FIT} {strategy}; it ranks nodes as",
        f"`gpusched place CLUSTER --view extended --policy {policy} --gpu-weight {weight}` does",
        f"(weight {weight}: {', '.join(gpus)}; weight 1: cpu, memory)." if gpus else "(weight 1: cpu, memory).",
        f"Pods choose it with spec.schedulerName: {name}.",
        f"Run it as a second scheduler (`kube-scheduler --config FILE`; its own lease, {name}),",
        "or copy the profile into the profiles of your kube-scheduler's configuration.",
        f"Not scored: {', '.join(UNMODELLED_SCORES)}; {POD_TOPOLOGY_SPREAD} adds no default constraints;",
        "every feasible node is scored (percentageOfNodesToScore: 100).",
    ]
    return SchedulerConfig(comments=comments, documents=[document], scheduler_name=name, strategy=strategy,
                           resources=resources)  # fmt: skip
