"""What the allocator does differently per release (features.py), on claims worked out by hand from the
k8s.io/dynamic-resource-allocation sources of 1.35, 1.36 and 1.37; both ends are checked against the real
control planes by tests/conformance/test_differential.py."""

from __future__ import annotations

import pytest

from gpusched.errors import InputError
from gpusched.models.dra import DeviceClass, ResourceClaim, ResourceSlice
from gpusched.planner.dra import features, search
from gpusched.planner.dra.allocator import allocate
from gpusched.planner.dra.cel import CelError, compile_selector, device_view
from gpusched.planner.dra.extended import enabled as extended_enabled
from gpusched.planner.dra.inventory import Inventory, NodeRef
from gpusched.planner.dra.objects import objects_from
from gpusched.planner.dra.plugin import CANNOT_ALLOCATE, TIMED_OUT, Unit, filter_node
from gpusched.planner.dra.search import NO_SUCH_KEY_HINT, DraError

D = "gpu.test.io"
NODE = NodeRef("n1")
OPAQUE = {"opaque": {"driver": D, "parameters": {"sharing": "MPS"}}}


def inventory(version, class_config=False):
    cls = {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{D}"'}}]}}
    if class_config:
        cls["spec"]["config"] = [OPAQUE]
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(3)]
    slice_ = {"metadata": {"name": "s"}, "spec": {"driver": D, "nodeName": "n1", "devices": devices,
                                                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}}}  # fmt: skip
    return Inventory([ResourceSlice.model_validate(slice_)], {"gpu": DeviceClass.model_validate(cls)}, set(), version)


def claim(requests, config=(), selector=None, count=1):
    found = []
    for name in requests:
        exactly = {"deviceClassName": "gpu", "count": count}
        if selector:
            exactly["selectors"] = [{"cel": {"expression": selector}}]
        found.append({"name": name, "exactly": exactly})
    spec = {"devices": {"requests": found, "config": [{"requests": list(names), **OPAQUE} for names in config]}}
    return ResourceClaim.model_validate({"metadata": {"name": "c", "namespace": "ml"}, "spec": spec})


def configs(version, the_claim, class_config=False):
    [result] = allocate(inventory(version, class_config), NODE, [the_claim])
    return [(c.source, c.requests) for c in result.devices.config or ()]


@pytest.mark.parametrize("version", [(1, 35), (1, 36, 6)])
def test_before_1_37_configs_keep_their_requests_and_a_claim_config_repeats_per_request(version):
    assert configs(version, claim(["a"]), class_config=True) == [("FromClass", ("a",))]
    assert configs(version, claim(["a", "b"], config=[("a", "b")])) == [("FromClaim", ("a", "b"))] * 2
    assert configs(version, claim(["a", "b"], config=[("b",)])) == [("FromClaim", ("b",))]


def test_from_1_37_a_config_for_every_request_is_for_all_and_added_once():
    version = (1, 37, 2)
    assert configs(version, claim(["a"]), class_config=True) == [("FromClass", None)]
    assert configs(version, claim(["a", "b"], config=[("a", "b")])) == [("FromClaim", None)]
    assert configs(version, claim(["a", "b"], config=[("b",)])) == [("FromClaim", ("b",))]


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ((1, 35, 4), "claim ml/c: selector #0: CEL runtime error: no such key: missing"),
        ((1, 36), "claim ml/c: selector #0: CEL runtime error: no such key: missing"),
        ((1, 37), f"claim ml/c: selector #0 on device {D}/n1/gpu-0: CEL runtime error: no such key: missing"
                  f"{NO_SUCH_KEY_HINT}"),
    ],
)  # fmt: skip
def test_a_selector_that_fails_at_runtime_in_each_release_s_words(version, words):
    failing = claim(["a"], selector=f'device.attributes["{D}"].missing == 1')
    with pytest.raises(DraError) as raised:
        allocate(inventory(version), NODE, [failing])
    assert str(raised.value) == words


def test_only_a_missing_key_gets_the_hint():
    failing = claim(["a"], selector=f'device.attributes["{D}"].index / 0 == 1')
    with pytest.raises(DraError) as raised:
        allocate(inventory((1, 37)), NODE, [failing])
    assert "CEL runtime error: division by zero" in str(raised.value) and NO_SUCH_KEY_HINT not in str(raised.value)


def test_gates_turn_on_by_minor_release():
    assert features.enabled("DRAPrioritizedList", (1, 34)) and features.enabled("DRAAdminAccess", (1, 35, 4))
    assert not features.enabled("DRAConsumableCapacity", (1, 35, 4)) and features.enabled(
        "DRAConsumableCapacity", (1, 36)
    )
    assert not features.enabled("DRADeviceTaintRules", (1, 36, 9)) and features.enabled("DRADeviceTaintRules", (1, 37))
    assert [extended_enabled(v) for v in ((1, 35), (1, 36), (1, 37))] == [False, True, True]
    with pytest.raises(KeyError):
        features.enabled("NoSuchGate", (1, 37))


def first_available(*subrequests):
    """One request `r` whose subrequests are (name, count or "All", selector)."""
    found = []
    for name, count, selector in subrequests:
        sub = {"name": name, "deviceClassName": "gpu", "selectors": [{"cel": {"expression": selector}}]}
        sub.update({"allocationMode": "All"} if count == "All" else {"count": count})
        found.append(sub)
    spec = {"devices": {"requests": [{"name": "r", "firstAvailable": found}]}}
    return ResourceClaim.model_validate({"metadata": {"name": "c", "namespace": "ml"}, "spec": spec})


def picked(version, the_claim):
    found = allocate(inventory(version), NODE, [the_claim])
    return found if isinstance(found, str) else [(r.request, r.device) for r in found[0].devices.results]


INDEX = f'device.attributes["{D}"].index'


@pytest.mark.parametrize("version", [(1, 36), (1, 37)])
def test_an_all_subrequest_takes_its_own_devices_from_1_36(version):
    the_claim = first_available(("s0", 2, f"{INDEX} < 1"), ("s1", "All", f"{INDEX} >= 1"))
    assert picked(version, the_claim) == [("r/s1", "gpu-1"), ("r/s1", "gpu-2")]


@pytest.mark.parametrize("version", [(1, 34, 4), (1, 35)])
def test_up_to_1_35_an_all_subrequest_goes_on_as_the_first_subrequest_after_one_device(version):
    """s0 (2 devices with index < 1) fails; s1 takes gpu-1, then device 1 of the request is looked for as s0's:
    gpu-0 (index 0), and with that s0's count of 2 is reached. When s0 matches nothing, the claim cannot be
    allocated at all."""
    the_claim = first_available(("s0", 2, f"{INDEX} < 1"), ("s1", "All", f"{INDEX} >= 1"))
    assert picked(version, the_claim) == [("r/s1", "gpu-1"), ("r/s0", "gpu-0")]
    nothing = first_available(("s0", 2, f"{INDEX} > 5"), ("s1", "All", f"{INDEX} >= 1"))
    assert picked(version, nothing) == ""
    assert picked((1, 36), nothing) == [("r/s1", "gpu-1"), ("r/s1", "gpu-2")]


def test_before_1_36_slices_are_taken_in_the_order_given_and_from_1_36_by_name():
    """A pool split over two slices, listed `s-b` (gpu-0) before `s-a` (gpu-1): 1.36 sorts them by name and takes
    gpu-1 first; 1.35 takes them as the informer lists them (random), gpusched as given."""
    cls = {"metadata": {"name": "gpu"}, "spec": {}}
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 2}
    slices = [
        {"metadata": {"name": name}, "spec": {"driver": D, "nodeName": "n1", "pool": pool,
                                              "devices": [{"name": device}]}}
        for name, device in (("s-b", "gpu-0"), ("s-a", "gpu-1"))
    ]  # fmt: skip
    one = claim(["a"])
    for version, first in (((1, 35), "gpu-0"), ((1, 36), "gpu-1"), ((1, 37), "gpu-1")):
        inv = Inventory([ResourceSlice.model_validate(s) for s in slices], {"gpu": DeviceClass.model_validate(cls)},
                        set(), version)  # fmt: skip
        [result] = allocate(inv, NODE, [one])
        assert [r.device for r in result.devices.results] == [first], version


def test_a_slice_without_devices_may_say_null_as_1_34_writes_it():
    spec = {"driver": D, "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n1", "devices": None}
    assert ResourceSlice.model_validate({"metadata": {"name": "s"}, "spec": spec}).spec.devices == ()


def test_device_taints_count_from_1_36_only():
    """DRADeviceTaints is off by default before 1.36: a tainted device is allocated and no toleration is recorded."""
    cls = {"metadata": {"name": "gpu"}, "spec": {}}
    devices = [{"name": "gpu-0", "taints": [{"key": "lost", "effect": "NoSchedule"}]}, {"name": "gpu-1"}]
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 1}
    slice_ = ResourceSlice.model_validate(
        {"metadata": {"name": "s"}, "spec": {"driver": D, "nodeName": "n1", "pool": pool, "devices": devices}}
    )
    toleration = {"key": "other", "operator": "Exists"}
    spec = {
        "devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu", "tolerations": [toleration]}}]}
    }
    one = ResourceClaim.model_validate({"metadata": {"name": "c", "namespace": "ml"}, "spec": spec})
    for version, device, tolerations in (((1, 34), "gpu-0", None), ((1, 35), "gpu-0", None), ((1, 36), "gpu-1", 1)):
        inv = Inventory([slice_], {"gpu": DeviceClass.model_validate(cls)}, set(), version)
        [result] = allocate(inv, NODE, [one])
        [taken] = result.devices.results
        assert taken.device == device and (taken.tolerations and len(taken.tolerations)) == tolerations, version


# --- the CEL environment of each release's API server -------------------------------------------------------------

LISTS = "[3, 1].sort()[0] == 1 && [[1], [2]].flatten().size() == 2"


def test_a_1_34_api_server_compiles_new_selectors_without_the_lists_extension():
    """Compatibility version 1.33: ext.Lists(3) came with 1.34, so 1.34 refuses what 1.35 and 1.37 accept."""
    with pytest.raises(CelError, match="undeclared reference to 'sort'"):
        compile_selector(LISTS, (1, 34, 4))
    for version in ((1, 35, 4), (1, 37, 2)):
        assert compile_selector(LISTS, version).matches(device_view("d", D, {}, {})) is True


def test_allow_multiple_allocations_is_a_device_field_only_with_consumable_capacity():
    expression = "!device.allowMultipleAllocations"
    for version in ((1, 34), (1, 35)):
        with pytest.raises(CelError, match="undefined field 'allowMultipleAllocations'"):
            compile_selector(expression, version)
    assert compile_selector(expression, (1, 37)).matches(device_view("d", D, {}, {})) is True


def test_objects_read_for_a_release_refuse_what_its_api_server_refuses():
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
           "spec": {"selectors": [{"cel": {"expression": LISTS}}]}}  # fmt: skip
    assert "gpu" in objects_from([("objects", [cls])], version=(1, 35)).classes
    with pytest.raises(InputError, match="CEL compile error in class gpu"):
        objects_from([("objects", [cls])], version=(1, 34))


# --- the filter timeout -------------------------------------------------------------------------------------------


def test_a_search_past_the_step_limit_is_the_nodes_reason_before_1_36_and_an_error_after(monkeypatch):
    """Three devices, then requests for 2 and 2: infeasible, which the bounds see at once, but the real search
    tries every pair for the first request before the second fails; with a limit of 5 devices tried it would time
    out, so gpusched runs it as the real one does and says it timed out, as each release says it."""
    monkeypatch.setenv("GPUSCHED_DRA_MAX_STEPS", "5")
    monkeypatch.setattr(search, "SLOW_STEPS", 5)
    unit = Unit("ml/p", [claim(["a", "b"], count=2)])
    assert filter_node(inventory((1, 35)), NODE, unit) == (TIMED_OUT, [])
    with pytest.raises(DraError, match="node n1: timed out trying to allocate devices") as error:
        filter_node(inventory((1, 37)), NODE, unit)
    assert error.value.timed_out
    monkeypatch.setenv("GPUSCHED_DRA_MAX_STEPS", "1000")  # a search that short finishes in time: the bounds stand
    assert filter_node(inventory((1, 35)), NODE, unit) == (CANNOT_ALLOCATE, [])


def test_a_node_whose_real_search_may_pass_the_timeout_is_slow_whatever_gpusched_found(monkeypatch):
    """Bounds see at once that 2 + 2 of 3 devices cannot be had; the real search tries the pairs first. Past
    SLOW_STEPS that is `slow`: the prediction then also lists the release's timeout wording (predict)."""
    monkeypatch.setattr(search, "SLOW_STEPS", 5)
    unit = Unit("ml/p", [claim(["a", "b"], count=2)])
    found = inventory((1, 35))
    assert filter_node(found, NODE, unit) == (CANNOT_ALLOCATE, []) and found.slow == {"n1"}
    monkeypatch.setattr(search, "SLOW_STEPS", 10_000)
    found = inventory((1, 35))
    assert filter_node(found, NODE, unit) == (CANNOT_ALLOCATE, []) and not found.slow


def test_one_budget_for_every_node_of_a_command(monkeypatch):
    """Each node keeps its own limit (the scheduler's timeout); all of a command's searches share one more, so
    1,000 nodes of impossible claims stop at it, naming it, instead of running 1,000 node limits."""
    from gpusched.errors import LimitError
    from gpusched.limits import command_budget, command_steps

    monkeypatch.setenv("GPUSCHED_DRA_MAX_STEPS", "1000")
    monkeypatch.setattr(search, "SLOW_STEPS", 5)  # the real search is run through, as on a slow node
    unit = Unit("ml/p", [claim(["a", "b"], count=2)])
    assert filter_node(inventory((1, 35)), NODE, unit) == (CANNOT_ALLOCATE, [])  # no budget: the node limit alone
    monkeypatch.setenv("GPUSCHED_DRA_COMMAND_STEPS", "20")
    with command_budget():
        left = command_steps()
        assert filter_node(inventory((1, 35)), NODE, unit) == (CANNOT_ALLOCATE, [])
        assert left is not None and 0 < left[0] < 20  # the steps it took are spent
        with pytest.raises(LimitError, match="GPUSCHED_DRA_COMMAND_STEPS"):
            for _ in range(20):
                filter_node(inventory((1, 35)), NODE, unit)
    assert command_steps() is None
