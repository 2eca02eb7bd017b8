"""The structured allocator, feature by feature, on small slices and claims whose answers are worked out by hand.

Each test states the expected devices and why, following k8s.io/dynamic-resource-allocation/structured (1.36+).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.models.dra import DeviceClass, ResourceClaim, ResourceSlice
from gpusched.planner.dra.allocator import allocate
from gpusched.planner.dra.inventory import Inventory, NodeRef
from gpusched.planner.dra.objects import DraObjects
from gpusched.planner.dra.plugin import explain
from gpusched.planner.dra.run import run_dra
from gpusched.planner.dra.search import DraError

D = "gpu.test.io"
GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{D}"'}}]},
}


def device(name, island=None, taints=None, consumes=None, **attributes):
    attrs = {
        key: {
            "int" if isinstance(v, int) and not isinstance(v, bool) else "bool" if isinstance(v, bool) else "string": v
        }
        for key, v in attributes.items()
    }
    if island is not None:
        attrs["island"] = {"int": island}
    found = {"name": name, "attributes": attrs, "capacity": {"memory": {"value": "80Gi"}}}
    if taints:
        found["taints"] = taints
    if consumes:
        found["consumesCounters"] = consumes
    return found


def slice_(node=None, devices=(), pool=None, name=None, driver=D, generation=1, count=1, **where):
    spec = {
        "driver": driver,
        "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
        **where,
    }
    if node is not None and not where:
        spec["nodeName"] = node
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{pool or node}-{driver}"},
        "spec": spec,
    }


def request(name="gpus", count=1, cls="gpu", selectors=(), **extra):
    exactly = {"deviceClassName": cls, "count": count, **extra}
    if extra.get("allocationMode") == "All":
        exactly.pop("count")
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim(name="c", requests=None, constraints=(), namespace="ml", allocated=None):
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": requests or [request()], "constraints": list(constraints)}},
    }
    if allocated:
        body["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpus", "driver": D, "pool": pool, "device": dev} for pool, dev in allocated
                    ]
                }
            }
        }
    return ResourceClaim.model_validate(body)


def inventory(slices, classes=(GPU_CLASS,), allocated=(), version=(1, 37)):
    return Inventory(
        [ResourceSlice.model_validate(s) for s in slices],
        {c["metadata"]["name"]: DeviceClass.model_validate(c) for c in classes},
        set(allocated),
        version,
    )


def devices_of(results):
    return [[(r.request, r.pool, r.device) for r in result.devices.results] for result in results]


NODE = NodeRef("n1", {"zone": "a"})


# --- order ------------------------------------------------------------------------------------------------------


def test_pools_by_driver_then_name_and_slices_by_name():
    """Candidates come from pool (driver, name) order, then slice name order: b.io/a-pool before b.io/b-pool,
    a.io before b.io, slice s1 before s2 - whatever the input order."""
    slices = [
        slice_("n1", [device("x")], pool="b-pool", driver="b.io"),
        slice_("n1", [device("y")], pool="a-pool", driver="b.io"),
    ]
    any_driver = {**GPU_CLASS, "spec": {}}
    assert devices_of(allocate(inventory(slices, [any_driver]), NODE, [claim()])) == [[("gpus", "a-pool", "y")]]
    slices.append(slice_("n1", [device("z")], pool="z-pool", driver="a.io"))
    assert devices_of(allocate(inventory(slices, [any_driver]), NODE, [claim()])) == [[("gpus", "z-pool", "z")]]
    two = [
        slice_(pool="p", name="s2", devices=[device("late")], count=2, nodeName="n1"),
        slice_(pool="p", name="s1", devices=[device("early")], count=2, nodeName="n1"),
    ]
    assert devices_of(allocate(inventory(two), NODE, [claim()])) == [[("gpus", "p", "early")]]


def test_claims_in_pod_order_then_requests_in_order():
    """The first claim takes gpu-0, the second claim's two requests take gpu-1 then gpu-2."""
    inv = inventory([slice_("n1", [device(f"gpu-{i}") for i in range(3)])])
    second = claim("b", [request("first"), request("second")])
    assert devices_of(allocate(inv, NODE, [claim("a"), second])) == [
        [("gpus", "n1", "gpu-0")],
        [("first", "n1", "gpu-1"), ("second", "n1", "gpu-2")],
    ]


def test_match_attribute_tries_combinations_in_order():
    """Islands {0, 2} and {1, 3}: gpu-0 + gpu-1 fails the constraint, gpu-0 + gpu-2 is the first combination that holds."""
    inv = inventory([slice_("n1", [device(f"gpu-{i}", island=i % 2) for i in range(4)])])
    pair = claim(requests=[request(count=2)], constraints=[{"requests": ["gpus"], "matchAttribute": f"{D}/island"}])
    assert devices_of(allocate(inv, NODE, [pair])) == [[("gpus", "n1", "gpu-0"), ("gpus", "n1", "gpu-2")]]


def test_match_attribute_needs_the_attribute_and_the_same_type():
    """A device without the attribute never satisfies it; int 1 and string "1" differ."""
    devices = [device("a"), device("b", island=1), {**device("c"), "attributes": {"island": {"string": "1"}}}]
    inv = inventory([slice_("n1", devices)])
    pair = claim(requests=[request(count=2)], constraints=[{"matchAttribute": f"{D}/island"}])
    assert allocate(inv, NODE, [pair]) == ""


def test_distinct_attribute():
    """Two devices on different NUMA nodes: numa 0, 0, 1 -> dev-0 and dev-2."""
    inv = inventory([slice_("n1", [device("dev-0", numa=0), device("dev-1", numa=0), device("dev-2", numa=1)])])
    spread = claim(requests=[request(count=2)], constraints=[{"distinctAttribute": f"{D}/numa"}])
    assert devices_of(allocate(inv, NODE, [spread])) == [[("gpus", "n1", "dev-0"), ("gpus", "n1", "dev-2")]]


@pytest.mark.parametrize(("version", "second"), [((1, 34), "dev-1"), ((1, 35), "dev-1"), ((1, 36), "dev-2")])
def test_distinct_attribute_needs_consumable_capacity(version, second):
    """Before 1.36 (DRAConsumableCapacity off) the API server drops distinctAttribute: the first two devices."""
    slices = [slice_("n1", [device("dev-0", numa=0), device("dev-1", numa=0), device("dev-2", numa=1)])]
    spread = claim(requests=[request(count=2)], constraints=[{"distinctAttribute": f"{D}/numa"}])
    found = devices_of(allocate(inventory(slices, version=version), NODE, [spread]))
    assert found == [[("gpus", "n1", "dev-0"), ("gpus", "n1", second)]]


# --- allocation modes -------------------------------------------------------------------------------------------


def test_all_takes_every_matching_device_or_nothing():
    inv = inventory([slice_("n1", [device("a", kind="x"), device("b", kind="y"), device("c", kind="x")])])
    every_x = claim(requests=[request(allocationMode="All", selectors=[f'device.attributes["{D}"].kind == "x"'])])
    assert devices_of(allocate(inv, NODE, [every_x])) == [[("gpus", "n1", "a"), ("gpus", "n1", "c")]]
    busy = inventory([slice_("n1", [device("a", kind="x"), device("c", kind="x")])], allocated=[(D, "n1", "c")])
    assert allocate(busy, NODE, [every_x]) == ""  # c is in use: All cannot have every device


def test_all_refuses_an_incomplete_pool_with_the_allocators_error():
    inv = inventory([slice_("n1", [device("a")], count=2)])
    with pytest.raises(
        DraError, match="asks for all devices, but resource pool gpu.test.io/n1 is currently being updated"
    ):
        allocate(inv, NODE, [claim(requests=[request(allocationMode="All")])])


def test_first_available_names_the_subrequest_used():
    """No two devices share an island, so `pair` fails and `one` (the fallback) is used: result `gpus/one`."""
    inv = inventory([slice_("n1", [device("gpu-0", island=0), device("gpu-1", island=1)])])
    prefer = claim(
        requests=[
            {
                "name": "gpus",
                "firstAvailable": [
                    {"name": "pair", "deviceClassName": "gpu", "count": 2},
                    {"name": "one", "deviceClassName": "gpu", "count": 1},
                ],
            }
        ],
        constraints=[{"requests": ["gpus/pair"], "matchAttribute": f"{D}/island"}],
    )
    assert devices_of(allocate(inv, NODE, [prefer])) == [[("gpus/one", "n1", "gpu-0")]]


def test_admin_access_uses_a_device_in_use():
    """gpu-0 is held by another claim; an adminAccess request still gets it, and the result says so."""
    inv = inventory([slice_("n1", [device("gpu-0")])], allocated=[(D, "n1", "gpu-0")])
    assert allocate(inv, NODE, [claim()]) == ""
    result = allocate(inv, NODE, [claim(requests=[request(adminAccess=True)])])
    assert devices_of(result) == [[("gpus", "n1", "gpu-0")]] and result[0].devices.results[0].admin_access is True


def test_devices_allocated_by_other_claims_are_in_use():
    objects = DraObjects(
        classes={"gpu": DeviceClass.model_validate(GPU_CLASS)},
        slices=[ResourceSlice.model_validate(slice_("n1", [device("gpu-0"), device("gpu-1")]))],
        claims=[claim("old", allocated=[("n1", "gpu-0")]), claim("new")],
    )
    report = run_dra(None, objects)
    assert [c.devices for c in report.claims] == [["n1/gpu-0"], ["n1/gpu-1"]]


# --- taints, counters, pools ------------------------------------------------------------------------------------


def test_taints_and_tolerations():
    """NoSchedule blocks unless tolerated; effect None never blocks; the result carries the tolerations."""
    taint = {"key": "gpu.test.io/xid", "value": "79", "effect": "NoSchedule"}
    inv = inventory(
        [slice_("n1", [device("bad", taints=[taint]), device("info", taints=[{**taint, "effect": "None"}])])]
    )
    assert devices_of(allocate(inv, NODE, [claim()])) == [[("gpus", "n1", "info")]]
    tolerate = [{"key": "gpu.test.io/xid", "operator": "Exists"}]
    result = allocate(inv, NODE, [claim(requests=[request(tolerations=tolerate)])])
    assert devices_of(result) == [[("gpus", "n1", "bad")]]
    assert result[0].devices.results[0].wire()["tolerations"] == [{"key": "gpu.test.io/xid", "operator": "Exists"}]


def test_partitionable_devices_share_counters():
    """Two partitions each consume 60 of a 100-unit counter: one fits, two do not; an allocated one uses it up."""
    counters = slice_(pool="n1", name="n1-counters", count=2, nodeName="n1")
    counters["spec"] = {
        **counters["spec"],
        "devices": [],
        "sharedCounters": [{"name": "gpu-0", "counters": {"mem": {"value": "100"}}}],
    }
    del counters["spec"]["devices"]
    use = [{"counterSet": "gpu-0", "counters": {"mem": {"value": "60"}}}]
    parts = slice_(
        pool="n1",
        name="n1-parts",
        count=2,
        nodeName="n1",
        devices=[device("p-0", consumes=use), device("p-1", consumes=use)],
    )
    inv = inventory([counters, parts])
    assert devices_of(allocate(inv, NODE, [claim()])) == [[("gpus", "n1", "p-0")]]
    assert allocate(inv, NODE, [claim(requests=[request(count=2)])]) == ""
    assert allocate(inventory([counters, parts], allocated=[(D, "n1", "p-0")]), NODE, [claim()]) == ""


def test_pool_generation_and_incomplete_pools():
    """The newer generation replaces the old slice; a pool missing one of its two slices is never allocated from."""
    old = slice_(pool="n1", name="old", devices=[device("stale")], generation=1, nodeName="n1")
    new = slice_(pool="n1", name="new", devices=[device("fresh")], generation=2, nodeName="n1")
    assert devices_of(allocate(inventory([old, new]), NODE, [claim()])) == [[("gpus", "n1", "fresh")]]
    half = slice_(pool="n1", name="half", devices=[device("x")], count=2, nodeName="n1")
    assert allocate(inventory([half]), NODE, [claim()]) == ""


def test_duplicate_device_names_across_slices_make_the_pool_invalid():
    one = slice_(pool="p", name="a", devices=[device("gpu-0")], count=2, nodeName="n1")
    two = slice_(pool="p", name="b", devices=[device("gpu-0")], count=2, nodeName="n1")
    assert allocate(inventory([one, two]), NODE, [claim()]) == "invalid resource pools were encountered"


def test_node_selection_and_the_node_selector_written():
    """nodeName pins the claim to the node; allNodes writes no selector; a slice nodeSelector is copied."""
    local = inventory([slice_("n1", [device("gpu-0")])])
    pinned = allocate(local, NODE, [claim()])[0].wire()["nodeSelector"]
    assert pinned == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    }
    everywhere = inventory([slice_(pool="fabric", devices=[device("nic-0")], allNodes=True)])
    assert "nodeSelector" not in allocate(everywhere, NODE, [claim()])[0].wire()
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    zonal = inventory([slice_(pool="rack", devices=[device("nic-0")], nodeSelector={"nodeSelectorTerms": [term]})])
    assert allocate(zonal, NODE, [claim()])[0].wire()["nodeSelector"] == {"nodeSelectorTerms": [term]}
    assert allocate(zonal, NodeRef("n2", {"zone": "b"}), [claim()]) == ""


def test_per_device_node_selection():
    """Only the device whose own nodeName is this node is reachable."""
    devices = [{**device("far"), "nodeName": "n2"}, {**device("near"), "nodeName": "n1"}]
    inv = inventory([slice_(pool="p", devices=devices, perDeviceNodeSelection=True)])
    assert devices_of(allocate(inv, NODE, [claim()])) == [[("gpus", "p", "near")]]


def test_class_selectors_and_request_selectors_both_apply():
    """The class admits type gpu only, the request wants 80Gi: the MIG device and the small GPU are out."""
    cls = {**GPU_CLASS, "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{D}"].type == "gpu"'}}]}}
    small = {**device("small", type="gpu"), "capacity": {"memory": {"value": "24Gi"}}}
    inv = inventory([slice_("n1", [device("mig", type="mig"), small, device("big", type="gpu")])], [cls])
    big = claim(requests=[request(selectors=[f'device.capacity["{D}"].memory.compareTo(quantity("80Gi")) >= 0'])])
    assert devices_of(allocate(inv, NODE, [big])) == [[("gpus", "n1", "big")]]


def test_at_most_32_devices_per_claim():
    inv = inventory([slice_("n1", [device(f"d{i}") for i in range(40)])])
    with pytest.raises(DraError, match="exceeds the claim limit of 32"):
        allocate(inv, NODE, [claim(requests=[request("a", count=20), request("b", count=20)])])


# --- pruning never changes the answer ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    islands=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    busy=st.sets(st.integers(0, 7)),
    count=st.integers(1, 4),
    constrained=st.booleans(),
)
def test_pruning_gives_the_same_answer(islands, busy, count, constrained):
    inv_devices = [device(f"gpu-{i}", island=island) for i, island in enumerate(islands)]
    held = [(D, "n1", f"gpu-{i}") for i in busy if i < len(islands)]
    constraints = [{"matchAttribute": f"{D}/island"}] if constrained else []
    wanted = [claim(requests=[request(count=count)], constraints=constraints)]
    fast = allocate(inventory([slice_("n1", inv_devices)], allocated=held), NODE, wanted, prune=True)
    slow = allocate(inventory([slice_("n1", inv_devices)], allocated=held), NODE, wanted, prune=False)
    assert fast == slow


def test_bench_cluster_answers_the_same_with_and_without_bounds():
    """The benchmark's claim on its fragmented cluster: node-0019 keeps island 0 whole (every 20th node)."""
    from gpusched.bench.dra_bench import bench_dra

    fast, slow = bench_dra(60, prune=True), bench_dra(60, prune=False)
    assert (fast.node, fast.devices, fast.feasible_nodes) == (slow.node, slow.devices, slow.feasible_nodes)
    assert fast.devices == [f"node-0019/gpu-{i}" for i in range(4)] and fast.feasible_nodes == 3


def test_diagnosis_names_an_error_a_claim_meets_only_on_its_own():
    """Together, claim a takes gpu-0 or gpu-1 and b (All, same island) finds a device in use: no error, no fit.
    On its own b takes gpu-0, must take gpu-1 and breaks its constraint: the allocator's error, named, not raised."""
    inv = inventory([slice_("n1", [device("gpu-0", island=0), device("gpu-1", island=1)])])
    both = claim("b", [request(allocationMode="All")], [{"matchAttribute": f"{D}/island"}])
    assert allocate(inv, NODE, [claim("a"), both]) == ""
    assert explain(inv, NODE, [claim("a"), both]) == (
        "claim ml/b: 2 free devices match, but allocated on its own the allocator stops: claim ml/b, request gpus: "
        f"cannot add device {D}/n1/gpu-1 because a claim constraint would not be satisfied"
    )
