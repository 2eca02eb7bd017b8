"""The placer's index (nodes grouped by signature, GPUs mapped between nodes of the same free counts) chooses
exactly what evaluating every node would: the same node, the same GPUs, placement after placement."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.models.workload import GpuNeeds
from gpusched.planner.place import Placer
from gpusched.planner.ranking import rank
from gpusched.planner.scheduler.plugins.gpudevices import GpuChoice
from gpusched.planner.scheduler.views import evaluate
from gpusched.planner.state import ClusterState
from gpusched.scenarios.realistic import realistic_cluster

TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
NEEDS = st.builds(
    lambda gpus, nvlink, shared, mig, tolerate, cpu: (
        GpuNeeds(
            nvlink=nvlink and not shared and not mig,
            shared=shared and not mig,
            mig_profile=mig or None,
            tolerations=TOLERATE if tolerate else [],
            cpu=str(cpu),
        ),
        1 if shared or mig else gpus,
    ),
    st.integers(1, 8),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["", "1g.10gb", "2g.20gb", "3g.40gb"]),
    st.booleans(),
    st.integers(1, 64),
)


def _every_node(
    state: ClusterState, pod: GpuNeeds, gpus: int, policy: str, view: str = "gpu", weight: int | None = None
) -> GpuChoice | None:
    """The reference: every node evaluated, the least rank wins."""
    found = [evaluate(pod, gpus, node, view) for node in state.nodes]  # type: ignore[arg-type]
    choices = [c for c in found if isinstance(c, GpuChoice)]
    return min(choices, key=lambda c: rank(c, pod, gpus, policy, weight), default=None)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 1000), st.sampled_from(["binpack", "spread", "topology"]), st.lists(NEEDS, min_size=1, max_size=40)
)
def test_the_index_chooses_what_evaluating_every_node_chooses(seed, policy, pods):
    cluster = realistic_cluster(30, seed)
    indexed, reference = ClusterState.from_cluster(cluster), ClusterState.from_cluster(cluster)
    placer = Placer(indexed, "gpu", policy)
    for number, (pod, gpus) in enumerate(pods):
        got, want = placer.choose(pod, gpus), _every_node(reference, pod, gpus, policy)
        assert (got is None) == (want is None)
        if got is None or want is None:
            continue
        assert (got.node.name, got.gpus, got.mig) == (want.node.name, want.gpus, want.mig)
        placer.bind(f"p{number}", pod, got)
        want.node.occupy(f"p{number}", pod, want.gpus, want.mig)


@settings(max_examples=20, deadline=None)
@given(
    st.integers(0, 1000),
    st.sampled_from(["binpack", "spread"]),
    st.sampled_from([None, 0, 3]),
    st.lists(NEEDS, min_size=1, max_size=30),
)
def test_in_the_extended_view_and_with_a_gpu_weight_too(seed, policy, weight, pods):
    """Where cpu and memory rank the nodes (a GPU weight) or count with the GPUs (extended), they are part of
    the signature; the index still agrees with evaluating every node."""
    cluster = realistic_cluster(20, seed)
    indexed, reference = ClusterState.from_cluster(cluster), ClusterState.from_cluster(cluster)
    placer = Placer(indexed, "extended", policy, weight)
    for number, (pod, gpus) in enumerate(pods):
        got, want = placer.choose(pod, gpus), _every_node(reference, pod, gpus, policy, "extended", weight)
        assert (got is None) == (want is None)
        if got is None or want is None:
            continue
        assert (got.node.name, got.gpus, got.mig) == (want.node.name, want.gpus, want.mig)
        placer.bind(f"p{number}", pod, got)
        want.node.occupy(f"p{number}", pod, want.gpus, want.mig)
