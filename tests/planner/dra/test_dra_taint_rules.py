"""DeviceTaintRules (resource.k8s.io/v1, GA and on in 1.37): the scheduler's ResourceSlice tracker appends a rule's
taint to every device its selector matches (driver, pool, device: each set one must match; an empty selector matches
all, no selector none), and the allocator then treats those taints like the slice's own."""

from __future__ import annotations

import pytest
from test_dra_allocator import GPU_CLASS, NODE, claim, device, devices_of, request, slice_

from gpusched.errors import InputError
from gpusched.planner.dra.allocator import allocate
from gpusched.planner.dra.inventory import Inventory
from gpusched.planner.dra.objects import objects_from

OTHER = "nic.test.io"
TAINT = {"key": "gpu.test.io/xid", "value": "79", "effect": "NoSchedule"}


def rule(name="r", selector=None, taint=TAINT, unset=False):
    spec = {"taint": taint} if unset else {"deviceSelector": selector or {}, "taint": taint}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


SLICES = [
    slice_("n1", [device("gpu-0"), device("gpu-1")]),
    slice_("n1", [device("gpu-0")], pool="n1-extra", name="extra"),
    slice_("n1", [device("gpu-0")], driver=OTHER),
]


def tainted_devices(*rules):
    objects = objects_from([("o.yaml", [GPU_CLASS, *rules, *SLICES])])
    return sorted(
        (s.spec.driver, s.spec.pool.name, d.name, tuple(t.key for t in d.taints))
        for s in objects.slices
        for d in s.spec.devices
        if d.taints
    )


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"driver": "gpu.test.io", "pool": "n1", "device": "gpu-1"}, [("gpu.test.io", "n1", "gpu-1")]),
        (
            {"device": "gpu-0"},
            [("gpu.test.io", "n1", "gpu-0"), ("gpu.test.io", "n1-extra", "gpu-0"), ("nic.test.io", "n1", "gpu-0")],
        ),  # fmt: skip
        (
            {"pool": "n1"},
            [("gpu.test.io", "n1", "gpu-0"), ("gpu.test.io", "n1", "gpu-1"), ("nic.test.io", "n1", "gpu-0")],
        ),
        ({"driver": OTHER}, [("nic.test.io", "n1", "gpu-0")]),
        ({"driver": "absent.io"}, []),
        (
            {},
            [
                ("gpu.test.io", "n1", "gpu-0"),
                ("gpu.test.io", "n1", "gpu-1"),
                ("gpu.test.io", "n1-extra", "gpu-0"),
                ("nic.test.io", "n1", "gpu-0"),
            ],
        ),  # fmt: skip
    ],
)
def test_selector_matches_every_criterion_that_is_set(selector, expected):
    found = tainted_devices(rule(selector=selector))
    assert [entry[:3] for entry in found] == expected


def test_no_selector_taints_nothing():
    assert tainted_devices(rule(unset=True)) == []


def test_rules_add_to_the_devices_own_taints_in_order():
    own = {"key": "own.io/t", "effect": "None"}
    objects = objects_from(
        [
            (
                "o.yaml",
                [
                    rule("a", {"device": "gpu-1"}),
                    rule("b", {"device": "gpu-1"}, {"key": "second.io/t", "effect": "NoExecute"}),
                    slice_("n1", [device("gpu-1", taints=[own])]),
                ],
            )
        ]
    )
    assert [t.key for t in objects.slices[0].spec.devices[0].taints] == ["own.io/t", "gpu.test.io/xid", "second.io/t"]


def test_allocator_skips_a_rule_tainted_device_unless_tolerated():
    objects = objects_from([("o.yaml", [GPU_CLASS, rule(selector={"device": "gpu-0", "pool": "n1"}), SLICES[0]])])
    inventory = Inventory(objects.slices, objects.classes, set())
    assert devices_of(allocate(inventory, NODE, [claim()])) == [[("gpus", "n1", "gpu-1")]]
    tolerate = [{"key": "gpu.test.io/xid", "operator": "Equal", "value": "79", "effect": "NoSchedule"}]
    tolerated = allocate(inventory, NODE, [claim(requests=[request(tolerations=tolerate)])])
    assert devices_of(tolerated) == [[("gpus", "n1", "gpu-0")]]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"deviceSelector": {}, "taint": {"key": "x", "effect": "Sometimes"}}, "spec.taint.effect"),
        ({"deviceSelector": {"deviceClassName": "gpu"}, "taint": TAINT}, "spec.deviceSelector.deviceClassName"),
        ({"deviceSelector": {}}, "spec.taint"),
    ],
)
def test_bad_rules_are_refused_naming_the_field(spec, field):
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"}, "spec": spec}
    with pytest.raises(InputError) as caught:
        objects_from([("o.yaml", [body])])
    assert field in caught.value.field
