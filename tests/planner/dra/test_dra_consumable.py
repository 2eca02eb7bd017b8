"""Consumable capacity (DRAConsumableCapacity), the allocator alone: shares of multi-allocatable devices, request
policies rounding a request up or refusing it, what allocated claims consumed, and the errors that stop the attempt.

Every expectation is worked out by hand from k8s.io/dynamic-resource-allocation/structured (1.37,
internal/incubating/consumable_capacity.go and allocator_incubating.go).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.models.dra import DeviceClass, ResourceClaim, ResourceSlice
from gpusched.planner.dra.allocator import allocate
from gpusched.planner.dra.capacity import amount_of, canonical
from gpusched.planner.dra.inventory import Inventory, NodeRef
from gpusched.planner.dra.search import DraError

D = "gpu.test.io"
NODE = NodeRef("n1")
CLASS = DeviceClass.model_validate(
    {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{D}"'}}]}}
)
RANGE = {"default": "8Gi", "validRange": {"min": "8Gi", "max": "64Gi", "step": "8Gi"}}
VALUES = {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}


def device(name, memory="80Gi", policy=None, multiple=True, consumes=None, index=None):
    capacity: dict = {"value": memory}
    if policy:
        capacity["requestPolicy"] = policy
    found: dict = {"name": name, "capacity": {"memory": capacity}}
    if multiple is not None:
        found["allowMultipleAllocations"] = multiple
    if consumes:
        found["consumesCounters"] = consumes
    if index is not None:
        found["attributes"] = {"index": {"int": index}}
    return found


def slice_(devices, name="n1", **extra):
    spec = {"driver": D, "pool": {"name": "n1", "generation": 1, "resourceSliceCount": extra.pop("count", 1)},
            "nodeName": "n1", "devices": devices, **extra}  # fmt: skip
    return ResourceSlice.model_validate({"metadata": {"name": name}, "spec": spec})


def request(name="r", memory=None, count=1, **extra):
    exactly: dict = {"deviceClassName": "gpu", "count": count, **extra}
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    if extra.get("allocationMode") == "All":
        exactly.pop("count")
    return {"name": name, "exactly": exactly}


def claim(name="c", requests=None, constraints=(), results=None):
    body: dict = {"metadata": {"name": name, "namespace": "ml"},
                  "spec": {"devices": {"requests": requests or [request()], "constraints": list(constraints)}}}  # fmt: skip
    if results is not None:
        body["status"] = {"allocation": {"devices": {"results": results}}}
    return ResourceClaim.model_validate(body)


def inventory(slices, claims=(), version=(1, 37)):
    return Inventory(slices, {"gpu": CLASS}, set(), version, claims)


def shares(result):
    """(request, device, shared, consumedCapacity) per result."""
    return [(r.request, r.device, r.share_id is not None, r.consumed_capacity) for r in result.devices.results]


def allocated(name, device_name, consumed=None, share=True):
    result: dict = {"request": "r", "driver": D, "pool": "n1", "device": device_name}
    if share:
        result["shareID"] = "9a8c7f42-1d0b-4c55-9a52-4b1c1f1f0a01"
    if consumed:
        result["consumedCapacity"] = {"memory": consumed}
    return claim(name, results=[result])


# --- shares ------------------------------------------------------------------------------------------------------


def test_a_multi_allocatable_device_is_shared_while_the_capacity_lasts():
    """30Gi + 30Gi fit in 80Gi; within one claim two requests may share one device; a third 30Gi would be 90Gi."""
    inv = inventory([slice_([device("gpu-0")])])
    result = allocate(inv, NODE, [claim(requests=[request("a", "30Gi"), request("b", "30Gi")])])
    assert [shares(r) for r in result] == [[("a", "gpu-0", True, {"memory": "30Gi"}),
                                            ("b", "gpu-0", True, {"memory": "30Gi"})]]  # fmt: skip
    three = [request("a", "30Gi"), request("b", "30Gi"), request("c", "30Gi")]
    assert allocate(inv, NODE, [claim(requests=three)]) == ""


def test_each_share_gets_its_own_share_id():
    inv = inventory([slice_([device("gpu-0")])])
    result = allocate(inv, NODE, [claim("a", [request(memory="1Gi")]), claim("b", [request(memory="1Gi")])])
    ids = [r.devices.results[0].share_id for r in result]
    assert len(set(ids)) == 2 and all(len(i or "") == 36 for i in ids)


def test_one_request_never_takes_the_same_device_twice():
    """The search goes on after the device it took: count 2 needs two devices, shares or not."""
    inv = inventory([slice_([device("gpu-0")])])
    assert allocate(inv, NODE, [claim(requests=[request(memory="1Gi", count=2)])]) == ""


def test_without_a_request_the_whole_capacity_or_the_default_is_consumed():
    """No capacity.requests: no policy consumes all 80Gi (nothing else fits), a policy its default (8Gi)."""
    whole = inventory([slice_([device("gpu-0")])])
    result = allocate(whole, NODE, [claim()])
    assert shares(result[0]) == [("r", "gpu-0", True, {"memory": "80Gi"})]
    assert allocate(whole, NODE, [claim(requests=[request("a"), request("b", "1")])]) == ""
    policy = inventory([slice_([device("gpu-0", policy=RANGE)])])
    assert shares(allocate(policy, NODE, [claim()])[0]) == [("r", "gpu-0", True, {"memory": "8Gi"})]


def test_a_device_without_capacity_is_shared_without_consumed_capacity():
    inv = inventory([slice_([{"name": "gpu-0", "allowMultipleAllocations": True}])])
    result = allocate(inv, NODE, [claim(requests=[request("a"), request("b")])])
    assert shares(result[0]) == [("a", "gpu-0", True, None), ("b", "gpu-0", True, None)]
    assert "consumedCapacity" not in result[0].devices.results[0].wire()


def test_a_single_allocation_device_checks_capacity_but_records_nothing():
    """The capacity request filters a device allocated whole (70Gi of 80Gi fits, 81Gi not); no share, no record."""
    inv = inventory([slice_([device("gpu-0", multiple=None)])])
    result = allocate(inv, NODE, [claim(requests=[request(memory="70Gi")])])
    assert shares(result[0]) == [("r", "gpu-0", False, None)]
    assert allocate(inv, NODE, [claim(requests=[request(memory="81Gi")])]) == ""
    assert allocate(inv, NODE, [claim(requests=[request("a", "10Gi"), request("b", "10Gi")])]) == ""


def test_a_capacity_the_device_lacks_skips_it():
    inv = inventory([slice_([device("gpu-0"), {"name": "gpu-1", "capacity": {"cores": {"value": "8"}}}])])
    body = request()
    body["exactly"]["capacity"] = {"requests": {"cores": "2"}}
    assert [shares(r) for r in allocate(inv, NODE, [claim(requests=[body])])] == [[("r", "gpu-1", False, None)]]


# --- request policies -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "memory", "consumed"),
    [
        (RANGE, "20Gi", "24Gi"),  # up to the next step from min
        (RANGE, "1Gi", "8Gi"),  # below min: min
        (RANGE, "64Gi", "64Gi"),  # on a step
        (RANGE, "65Gi", None),  # 72Gi is past max: refused
        ({"default": "8Gi", "validRange": {"min": "8Gi"}}, "9.5Gi", "9728Mi"),  # no step: as requested
        (VALUES, "15Gi", "20Gi"),  # the first valid value not below
        (VALUES, "10Gi", "10Gi"),
        (VALUES, "41Gi", None),  # above every value: stays 41Gi, no valid value
        ({"default": "1Gi"}, "3Gi", "3Gi"),  # a default alone does not restrict requests
    ],
)
def test_a_request_is_rounded_up_by_the_policy_or_refused(policy, memory, consumed):
    inv = inventory([slice_([device("gpu-0", policy=policy)])])
    found = allocate(inv, NODE, [claim(requests=[request(memory=memory)])])
    assert (found == "") if consumed is None else shares(found[0]) == [("r", "gpu-0", True, {"memory": consumed})]


def test_fractional_ranges_round_in_whole_units():
    """min 500m, step 250m: DRAFractionalCapacityRange is off by default, so min, step and the request are read with
    Value() (rounded up to 1): 600m consumes 1, written in the step's format."""
    policy = {"default": "1", "validRange": {"min": "500m", "step": "250m"}}
    devices = [device("gpu-0", memory="4", policy=policy)]
    found = allocate(inventory([slice_(devices)]), NODE, [claim(requests=[request(memory="600m")])])
    assert shares(found[0]) == [("r", "gpu-0", True, {"memory": "1"})]


# --- what allocated claims consumed ---------------------------------------------------------------------------------


def test_allocated_shares_count_their_consumed_capacity():
    """An allocated share of 50Gi leaves 30Gi: 30Gi fits, 31Gi not (gpu-1 is the next choice)."""
    slices = [slice_([device("gpu-0"), device("gpu-1")])]
    inv = inventory(slices, [allocated("old", "gpu-0", "50Gi")])
    assert shares(allocate(inv, NODE, [claim(requests=[request(memory="30Gi")])])[0])[0][1] == "gpu-0"
    assert shares(allocate(inv, NODE, [claim(requests=[request(memory="31Gi")])])[0])[0][1] == "gpu-1"


def test_an_allocated_result_without_share_id_holds_the_device_whole():
    inv = inventory([slice_([device("gpu-0")])], [allocated("old", "gpu-0", share=False)])
    assert allocate(inv, NODE, [claim(requests=[request(memory="1Gi")])]) == ""


def test_admin_access_results_hold_nothing():
    old = claim("old", results=[{"request": "r", "driver": D, "pool": "n1", "device": "gpu-0", "adminAccess": True}])
    inv = inventory([slice_([device("gpu-0", multiple=None)])], [old])
    assert shares(allocate(inv, NODE, [claim()])[0]) == [("r", "gpu-0", False, None)]


def counter_slice(total="100"):
    return ResourceSlice.model_validate({"metadata": {"name": "n1-counters"}, "spec": {
        "driver": D, "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2}, "nodeName": "n1",
        "sharedCounters": [{"name": "s", "counters": {"mem": {"value": total}}}]}})  # fmt: skip


USE = [{"counterSet": "s", "counters": {"mem": {"value": "60"}}}]


def test_counters_are_consumed_once_by_the_first_share():
    """The device consumes 60 of 100 counters: two shares need them once; a second device cannot have them."""
    devices = slice_([device("gpu-0", consumes=USE), device("gpu-1", consumes=USE)], name="n1-devices", count=2)
    inv = inventory([counter_slice(), devices])
    two = [request("a", "10Gi"), request("b", "10Gi")]
    assert [r[1] for r in shares(allocate(inv, NODE, [claim(requests=two)])[0])] == ["gpu-0", "gpu-0"]
    inv = inventory([counter_slice(), devices], [allocated("old", "gpu-0", "10Gi")])
    assert shares(allocate(inv, NODE, [claim(requests=[request(memory="10Gi")])])[0])[0][1] == "gpu-0"
    assert allocate(inv, NODE, [claim(requests=[request(memory="75Gi")])]) == ""  # gpu-0 full, gpu-1 lacks counters


def test_a_share_without_consumed_capacity_holds_the_counters_from_1_37():
    """gpu-0 has no capacity; an allocated share of it (a shareID alone) consumed its 60 counters once. 1.37 lets a
    new share skip the counters; 1.36 counts only allocated consumption, so the new share needs 60 more (of 40 left)."""
    bare = {"name": "gpu-0", "allowMultipleAllocations": True, "consumesCounters": USE}
    slices = [counter_slice(), slice_([bare], name="n1-devices", count=2)]
    old = [allocated("old", "gpu-0")]
    assert shares(allocate(inventory(slices, old), NODE, [claim()])[0]) == [("r", "gpu-0", True, None)]
    assert allocate(inventory(slices, old, version=(1, 36)), NODE, [claim()]) == ""


def test_distinct_attribute_keeps_shares_on_different_devices():
    inv = inventory([slice_([device("gpu-0", index=0), device("gpu-1", index=1)])])
    both = [request("a", "1Gi"), request("b", "1Gi")]
    distinct = [{"distinctAttribute": f"{D}/index"}]
    assert [r[1] for r in shares(allocate(inv, NODE, [claim(requests=both)])[0])] == ["gpu-0", "gpu-0"]
    assert [r[1] for r in shares(allocate(inv, NODE, [claim(requests=both, constraints=distinct)])[0])] == [
        "gpu-0",
        "gpu-1",
    ]


def test_all_takes_every_device_whose_static_capacity_fits():
    """allocationMode All: a device too small for the request is left out, one shared already must still fit."""
    inv = inventory([slice_([device("gpu-0"), device("gpu-1", memory="20Gi")])])
    result = allocate(inv, NODE, [claim(requests=[request(memory="30Gi", allocationMode="All")])])
    assert [r[1] for r in shares(result[0])] == ["gpu-0"]
    inv = inventory([slice_([device("gpu-0"), device("gpu-1", memory="20Gi")])], [allocated("old", "gpu-0", "60Gi")])
    assert allocate(inv, NODE, [claim(requests=[request(memory="30Gi", allocationMode="All")])]) == ""


# --- errors and releases --------------------------------------------------------------------------------------------


def test_a_negative_consumption_stops_the_attempt_from_1_37():
    inv = inventory([slice_([device("gpu-0")])])
    with pytest.raises(DraError) as error:
        allocate(inv, NODE, [claim(requests=[request(memory="-1Gi")])])
    assert str(error.value) == (
        'claim ml/c, request r: checking capacity for device gpu.test.io/n1/gpu-0: capacity "memory": '
        "capacity value is negative"
    )
    assert allocate(inventory([slice_([device("gpu-0")])], version=(1, 36)), NODE, [claim(requests=[request(
        memory="-1Gi")])]) != ""  # fmt: skip


def test_a_negative_capacity_stops_any_search_that_reaches_the_device():
    """The API server accepts a negative capacity value; unrequested, it is consumed whole, so from 1.37 every claim
    that reaches the device stops the attempt - gpusched's bounds must not skip the node first (count 2 of one)."""
    inv = inventory([slice_([device("gpu-0", memory="-1", multiple=None)])])
    with pytest.raises(DraError, match='capacity "memory": capacity value is negative$'):
        allocate(inv, NODE, [claim(requests=[request(count=2)])])


def test_all_names_the_device_alone_in_its_error():
    inv = inventory([slice_([device("gpu-0")])])
    with pytest.raises(DraError, match=r"^claim ml/c, request r: checking capacity for device gpu-0: capacity"):
        allocate(inv, NODE, [claim(requests=[request(memory="-1", allocationMode="All")])])


def test_without_the_gate_the_fields_are_dropped():
    """1.35: no shares (the device goes whole), capacity requests and shareIDs ignored."""
    slices = [slice_([device("gpu-0", policy=RANGE), device("gpu-1", policy=RANGE)])]
    inv = inventory(slices, [allocated("old", "gpu-0", "8Gi")], version=(1, 35))
    result = allocate(inv, NODE, [claim(requests=[request(memory="200Gi")])])
    assert shares(result[0]) == [("r", "gpu-1", False, None)]
    assert allocate(inv, NODE, [claim(requests=[request("a"), request("b")])]) == ""


# --- Go's quantities -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "shown"),
    [("10Gi", "10Gi"), ("1.5Gi", "1536Mi"), ("0.5Gi", "512Mi"), ("1024Mi", "1Gi"), ("1500m", "1500m"),
     ("1.5", "1500m"), ("2000", "2k"), ("1e3", "1e3"), ("512", "512"), ("0", "0"), ("1000Ki", "1000Ki"),
     ("2048", "2048"), ("0.0000000001", "1n")],
)  # fmt: skip
def test_consumed_capacity_is_written_as_go_writes_quantities(written, shown):
    assert amount_of(written).text == shown


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=2**40), st.sampled_from(["DecimalSI", "BinarySI"]))
def test_canonical_text_reads_back_to_the_same_amount(number, form):
    assert amount_of(canonical(Decimal(number), form)).value == number
