"""Generated openb variants: each moves its share to the level asked, leaves the rest alone, and repeats exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.errors import InputError
from gpusched.scenarios.openb import MILLI, OpenbNode, OpenbPod
from gpusched.scenarios.openb_variants import VARIANT_KINDS, UnbuildableVariant, Variant, apply_variant, parse_variant

NODES = [
    OpenbNode(name="n-a", cpu_milli=104000, memory_mib=524288, gpu=2, model="T4"),
    OpenbNode(name="n-b", cpu_milli=96000, memory_mib=393216, gpu=8, model="G2"),
    OpenbNode(name="n-c", cpu_milli=8000, memory_mib=61440, gpu=1, model="P100"),
]


def _pods(cpu_only: int, sharing: int, whole: int, multi: int) -> list[OpenbPod]:
    pods = [OpenbPod(name=f"cpu-{i}", cpu_milli=2000 + i, num_gpu=0, gpu_milli=0) for i in range(cpu_only)]
    pods += [OpenbPod(name=f"share-{i}", cpu_milli=4000, num_gpu=1, gpu_milli=100 + 25 * i) for i in range(sharing)]
    pods += [OpenbPod(name=f"one-{i}", cpu_milli=8000, num_gpu=1, gpu_milli=MILLI) for i in range(whole)]
    pods += [
        OpenbPod(name=f"multi-{i}", cpu_milli=32000, num_gpu=2 + 2 * (i % 3), gpu_milli=MILLI) for i in range(multi)
    ]
    return pods


def _shares(pods: list[OpenbPod]) -> dict[str, float]:
    gpu = [p for p in pods if p.num_gpu]
    milli = sum(p.total_milli for p in gpu)
    return {
        "cpu-heavy": sum(1 for p in pods if not p.num_gpu) / len(pods),
        "cpu-share": sum(p.cpu_milli for p in pods if not p.num_gpu) / sum(p.cpu_milli for p in pods),
        "sharing-heavy": sum(p.total_milli for p in gpu if p.gpu_milli < MILLI) / milli,
        "multi-gpu-heavy": sum(p.num_gpu for p in gpu if p.num_gpu > 1) / sum(p.num_gpu for p in gpu),
        "gpu-model-constrained": sum(1 for p in gpu if p.models) / len(gpu),
    }


BASE = _pods(cpu_only=20, sharing=30, whole=60, multi=6)


def _step(kind: str, pods: list[OpenbPod]) -> float:
    """How close a share can come to its level: one move of the biggest pod it moves, in the result's totals."""
    gpu = [p for p in pods if p.num_gpu]
    biggest = max(p.total_milli for p in BASE)
    return {
        "cpu-heavy": 1 / len(pods),
        "cpu-share": max((p.cpu_milli for p in pods if not p.num_gpu), default=0) / sum(p.cpu_milli for p in pods),
        "sharing-heavy": biggest / sum(p.total_milli for p in gpu),
        "multi-gpu-heavy": max(p.num_gpu for p in BASE) / sum(p.num_gpu for p in gpu),
        "gpu-model-constrained": 1 / len(gpu),
    }[kind]


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(VARIANT_KINDS)), level=st.floats(0.0, 0.9), seed=st.integers(0, 50))
def test_a_variant_moves_its_share_to_the_level(kind, level, seed):
    before = _shares(BASE)[kind]
    pods = apply_variant(BASE, NODES, Variant(kind, level, seed))
    got = _shares(pods)[kind]
    top = max(node.cpu_milli for node in NODES)
    if kind in ("multi-gpu-heavy", "gpu-model-constrained") and level < before:
        assert got == pytest.approx(before)  # these only add: a level below the trace's leaves it as it is
    elif kind == "cpu-share" and all(p.cpu_milli in (1, top) for p in pods if not p.num_gpu):
        assert got <= level if level > before else got >= level  # out of reach: every pod at the largest node or 1m
    else:
        assert abs(got - level) <= _step(kind, pods) + 1e-9
    assert all(OpenbPod.model_validate(p.model_dump()) == p for p in pods)  # every pod still a valid row
    assert len({p.name for p in pods}) == len(pods)  # copies are renamed


@pytest.mark.parametrize("kind", sorted(VARIANT_KINDS))
def test_a_variant_is_the_same_list_every_time_and_its_seed_matters(kind):
    variant = Variant(kind, 0.6, 3)
    first = apply_variant(BASE, NODES, variant)
    assert apply_variant(BASE, NODES, variant) == first
    assert apply_variant(BASE, NODES, Variant(kind, 0.6, 4)) != first


def test_each_variant_leaves_the_other_pods_alone():
    cpu = apply_variant(BASE, NODES, Variant("cpu-heavy", 0.5))
    assert [p for p in cpu if p.num_gpu] == [p for p in BASE if p.num_gpu]
    sharing = apply_variant(BASE, NODES, Variant("sharing-heavy", 0.7))
    assert len(sharing) == len(BASE) and [p for p in sharing if not p.num_gpu] == [p for p in BASE if not p.num_gpu]
    share = apply_variant(BASE, NODES, Variant("cpu-share", 0.5))
    assert [p for p in share if p.num_gpu] == [p for p in BASE if p.num_gpu]
    assert [p.name for p in share] == [p.name for p in BASE]
    multi = apply_variant(BASE, NODES, Variant("multi-gpu-heavy", 0.5))
    assert multi[: len(BASE)] == BASE and all(p.num_gpu > 1 for p in multi[len(BASE) :])


def test_a_constrained_pod_gets_a_model_that_can_hold_it():
    pods = apply_variant(BASE, NODES, Variant("gpu-model-constrained", 0.8))
    for pod in pods:
        if pod.models:
            (model,) = pod.models
            assert any(n.model == model and n.gpu >= pod.num_gpu and n.cpu_milli >= pod.cpu_milli for n in NODES)
    assert {p.models for p in pods if p.num_gpu > 2} <= {(), ("G2",)}  # 4 and 6 GPUs: only the G2 node


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cpu-heavy", "expected kind:level"),
        ("cpu-light:0.2", "unknown kind"),
        ("cpu-heavy:1.5", "a share in [0, 1)"),
        ("cpu-heavy:0.2@x", "expected kind:level"),
    ],
)
def test_a_bad_variant_is_an_input_error(text, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        parse_variant(text)


def test_a_trace_without_the_pods_to_copy_cannot_give_the_variant():
    with pytest.raises(UnbuildableVariant, match="no multi-GPU pod") as raised:
        apply_variant(_pods(5, 5, 5, 0), NODES, Variant("multi-gpu-heavy", 0.3))
    assert raised.value.source == "variant multi-gpu-heavy:0.3"


def test_labels_round_trip():
    assert parse_variant("cpu-heavy:0.3").label == "cpu-heavy:0.3"
    assert parse_variant(" sharing-heavy:0.70@7 ").label == "sharing-heavy:0.7@7"
