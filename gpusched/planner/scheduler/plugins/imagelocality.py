"""ImageLocality's Score (pkg/scheduler/framework/plugins/imagelocality): nodes that already hold the pod's images.

Each container's image (init containers too), normalised (`:latest` when no tag) and looked up among the node's
image names as the kubelet reports them, counts
its size on the node times the share of all nodes that have it; the sum is clamped to 23 MB .. 1000 MB per
container and scaled to 0..100. Node images come from status.images (names, sizeBytes).
"""

from __future__ import annotations

from ....models.kube import KubeNode, KubePod
from ..names import IMAGE_LOCALITY as NAME

__all__ = ["NAME", "image_score", "normalized_image", "holders"]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image(name: str) -> str:
    """A name without a tag gets `:latest` (a `:` before the last `/` is a registry port, not a tag)."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


def holders(nodes: list[KubeNode]) -> dict[str, int]:
    """How many nodes of the snapshot hold each image name (the spread counts them all)."""
    found: dict[str, int] = {}
    for other in nodes:
        for image in other.images:
            found[image] = found.get(image, 0) + 1
    return found


def image_score(pod: KubePod, node: KubeNode, held: dict[str, int], total_nodes: int) -> int:
    """`held`: holders() of every node."""
    sizes = node.images  # the kubelet's names as they are; only the pod's are normalised
    total = 0
    for image in pod.images:
        key = normalized_image(image)
        if key in sizes:
            total += int(sizes[key] * (held[key] / total_nodes))
    most = MAX_CONTAINER_THRESHOLD * len(pod.images)
    total = min(max(total, MIN_THRESHOLD), most)
    return 100 * (total - MIN_THRESHOLD) // (most - MIN_THRESHOLD) if most > MIN_THRESHOLD else 0
