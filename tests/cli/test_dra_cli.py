"""`gpusched slices`, `gpusched dra` and `gpusched k8s --objects` end to end: the seed's outputs, the Hard exercise,
the kind walk-through, the published v1 schema, and every kind of bad input (exit 2, or the scheduler's words, exit 1).
"""

from __future__ import annotations

from pathlib import Path

import kubernetes.client as k8s_models
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KIND = ROOT / "examples" / "kind"
HARD = ROOT / "examples" / "dra" / "hard-exercise.yaml"
SPLIT = ROOT / "examples" / "dra" / "split-pairs.yaml"
SEED_MONDAY = [
    "claim ml/big-sxm: allocated on dgx-a: dgx-a/gpu-0",
    "claim ml/nvlink-pair: allocated on pcie-a: pcie-a/gpu-0, pcie-a/gpu-1",
    "claim ml/rerank-mig: allocated on mig-a: mig-a/gpu-0-mig-3g-40gb-4",
    "claim ml/h200: cannot allocate all claims: no device on any node matches the DeviceClass and the selectors",
]
V1 = {
    "DeviceClass": k8s_models.V1DeviceClass,
    "ResourceClaim": k8s_models.ResourceV1ResourceClaim,
    "ResourceClaimTemplate": k8s_models.V1ResourceClaimTemplate,
    "ResourceSlice": k8s_models.V1ResourceSlice,
}


def published_v1(obj: dict) -> None:
    """Validate against the kubernetes client's resource.k8s.io/v1 models (generated from the published OpenAPI):
    unknown fields, wrong types and missing required fields are refused."""
    V1[obj["kind"]].model_validate(obj)


# --- the seed ---------------------------------------------------------------------------------------------------


def test_seed_dra_outputs(gpusched):
    result = gpusched("dra", "--cluster", "monday", "--objects", "seed-claims")
    assert result.lines == SEED_MONDAY
    assert result.exit_code == 1  # h200 cannot allocate


def test_nvlink_pair_fails_on_the_fragmented_cluster_naming_the_constraint(gpusched):
    result = gpusched("dra", "--cluster", "fragmented", "--objects", "seed-claims")
    line = next(line for line in result.lines if "nvlink-pair" in line)
    assert line == (
        "claim ml/nvlink-pair: cannot allocate all claims: pcie-a: 4 free devices match, but no combination satisfies "
        "matchAttribute gpu.example.com/nvlinkIsland; no device matches the DeviceClass and the selectors on the other 4 nodes"
    )
    assert result.exit_code == 1


def test_dra_json_has_the_status_allocation_shape_and_the_scheduler_message(gpusched):
    report = gpusched("dra", "--cluster", "monday", "--objects", "seed-claims", "--json").json()
    big = report["claims"][0]
    assert big["allocation"] == {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "dgx-a", "device": "gpu-0"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["dgx-a"]}]}]
        },
    }
    assert big["feasible"] == ["dgx-a", "dgx-b"]
    h200 = report["claims"][3]
    assert h200["message"] == (
        "0/5 nodes are available: 5 cannot allocate all claims. preemption: 0/5 nodes are "
        "available: 5 Preemption is not helpful for scheduling."
    )
    assert report["all_allocated"] is False
    old = gpusched("dra", "--cluster", "monday", "--objects", "seed-claims", "--json", "--k8s-version", "1.36").json()
    assert "still not schedulable, preemption:" in old["claims"][3]["message"]


def test_kind_walkthrough_predicts_gpu0_and_gpu2(gpusched):
    result = gpusched(
        "k8s",
        "--nodes",
        KIND / "nodes.json",
        "--pods",
        KIND / "pods.json",
        KIND / "dra.json",
        "--objects",
        KIND / "dra-objects.json",
        "--objects",
        KIND / "claims.json",
        "--objects",
        KIND / "slice.json",
    )
    assert result.exit_code == 0
    assert result.lines == [
        "fits: cc-lab-control-plane",
        "claim gpu/pair -> cc-lab-control-plane/gpu-0, cc-lab-control-plane/gpu-2",
    ]


def test_kind_walkthrough_before_the_slice_is_published(gpusched):
    args = [
        "k8s",
        "--nodes",
        KIND / "nodes.json",
        KIND / "dra.json",
        "--objects",
        KIND / "dra-objects.json",
        "--objects",
        KIND / "claims.json",
    ]
    result = gpusched(*args)
    assert result.exit_code == 1
    assert result.lines[-1] == (
        "FailedScheduling: 0/1 nodes are available: 1 cannot allocate all claims. preemption: "
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    old = gpusched(*args, "--k8s-version", "1.35")
    assert "1 cannot allocate all claims. still not schedulable, preemption:" in old.lines[-1]


def test_slices_command_reproduces_the_committed_kind_slice(gpusched):
    result = gpusched("slices", KIND / "kind-model.json")
    assert result.stdout == (KIND / "slice.json").read_text()


# --- the Hard exercise -------------------------------------------------------------------------------------------


def test_hard_exercise_prefers_a_pair_in_one_island(gpusched):
    result = gpusched("dra", "--cluster", "monday", "--objects", HARD)
    assert result.exit_code == 0
    assert result.lines == [
        "claim ml/trainer: allocated on dgx-a: dgx-a/gpu-0 (gpus/pair), dgx-a/gpu-1 (gpus/pair), fabric/nic-0"
    ]


def test_hard_exercise_falls_back_and_names_the_subrequest(gpusched):
    """gpu-a has two GPUs in different islands (`two`, score 7), gpu-b one free GPU (`one`, score 6): gpu-a wins."""
    report = gpusched("dra", "--cluster", SPLIT, "--objects", HARD, "--json").json()
    trainer = report["claims"][0]
    assert trainer["node"] == "gpu-a" and trainer["feasible"] == ["gpu-a", "gpu-b"]
    assert [(r["request"], r["pool"], r["device"]) for r in trainer["allocation"]["devices"]["results"]] == [
        ("gpus/two", "gpu-a", "gpu-0"),
        ("gpus/two", "gpu-a", "gpu-1"),
        ("nic", "fabric", "nic-0"),
    ]
    assert trainer["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["gpu-a"]


def test_hard_exercise_allnodes_pool_alone_writes_no_node_selector(gpusched, write):
    objects = list(yaml.safe_load_all(HARD.read_text()))
    nic_only = {
        **objects[3],
        "spec": {
            "devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "fabric.example.com", "count": 2}}]}
        },
    }
    report = gpusched(
        "dra", "--cluster", SPLIT, "--objects", write("o.yaml", yaml.safe_dump_all([*objects[:3], nic_only])), "--json"
    ).json()
    claim = report["claims"][0]
    assert claim["devices"] == ["fabric/nic-0", "fabric/nic-1"] and "nodeSelector" not in claim["allocation"]


# --- templates and pods ------------------------------------------------------------------------------------------


def _pod(name, claims, status=None):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"resourceClaims": claims, "containers": [{"name": "main", "image": "x"}]},
        "status": status or {"phase": "Pending"},
    }


def test_templates_stamp_one_claim_per_pod(gpusched, write):
    classes = list(yaml.safe_load_all((ROOT / "gpusched" / "scenarios" / "dra" / "seed-claims.yaml").read_text()))[:2]
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-sxm", "namespace": "ml"},
        "spec": {
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
        },
    }
    pods = [_pod(f"worker-{i}", [{"name": "gpu", "resourceClaimTemplateName": "one-sxm"}]) for i in range(2)]
    report = gpusched(
        "dra",
        "--cluster",
        "monday",
        "--objects",
        write("o.yaml", yaml.safe_dump_all([*classes, template, *pods])),
        "--json",
    ).json()
    assert [(c["claim"], c["pod"], c["template"], c["devices"]) for c in report["claims"]] == [
        ("ml/worker-0-gpu", "ml/worker-0", "ml/one-sxm", ["dgx-a/gpu-0"]),
        ("ml/worker-1-gpu", "ml/worker-1", "ml/one-sxm", ["dgx-a/gpu-1"]),
    ]


def test_missing_claims_are_the_scheduler_prefilter_messages(gpusched, write):
    pods = [
        _pod("a", [{"name": "gpu", "resourceClaimName": "nope"}]),
        _pod("b", [{"name": "gpu", "resourceClaimTemplateName": "gone"}]),
    ]
    report = gpusched("dra", "--cluster", "monday", "--objects", write("o.yaml", yaml.safe_dump_all(pods)), "--json")
    assert report.exit_code == 1
    assert [(c["claim"], c["pod"], c["reason"]) for c in report.json()["claims"]] == [
        ("ml/nope", "ml/a", 'could not find ResourceClaim "ml/nope"'),
        ("ml/b-gpu", "ml/b", 'pod "ml/b": ResourceClaim not created yet'),
    ]


# --- the published schema ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["gpu.nvidia.com", "gpu.example.com"])
def test_slices_are_valid_v1_objects(gpusched, driver):
    items = gpusched("slices", "monday", "--driver", driver, "--classes", "--json").json()["items"]
    assert [item["kind"] for item in items][:2] == ["DeviceClass", "DeviceClass"]
    for item in items:
        published_v1(item)


def test_nvidia_profile_names_attributes_and_capacities(gpusched):
    items = gpusched("slices", "monday", "--driver", "gpu.nvidia.com").json()["items"]
    mig = next(item for item in items if item["spec"]["nodeName"] == "mig-a")["spec"]["devices"]
    assert [d["name"] for d in mig] == [
        "gpu-0-mig-1g10gb-19-0",
        "gpu-0-mig-1g10gb-19-1",
        "gpu-0-mig-2g20gb-14-2",
        "gpu-0-mig-3g40gb-9-4",
    ]
    three = mig[3]
    assert set(three["attributes"]) == {
        "type",
        "uuid",
        "parentUUID",
        "profile",
        "productName",
        "brand",
        "architecture",
        "cudaComputeCapability",
        "driverVersion",
        "cudaDriverVersion",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
        "gpusched.io/nvlinkIsland",
    }
    assert set(three["capacity"]) == {
        "multiprocessors",
        "copyEngines",
        "decoders",
        "encoders",
        "jpegEngines",
        "ofaEngines",
        "memory",
        "memorySlice4",
        "memorySlice5",
        "memorySlice6",
        "memorySlice7",
    }
    dgx = next(item for item in items if item["spec"]["nodeName"] == "dgx-a")["spec"]["devices"][0]
    assert dgx["name"] == "gpu-0" and dgx["capacity"] == {"memory": {"value": "80Gi"}}
    assert dgx["attributes"]["cudaComputeCapability"] == {"version": "8.0.0"}


def test_claims_in_examples_and_builtins_are_valid_v1_objects():
    documents = [
        *yaml.safe_load_all((ROOT / "gpusched" / "scenarios" / "dra" / "seed-claims.yaml").read_text()),
        *yaml.safe_load_all(HARD.read_text()),
    ]
    for name in ("claims.json", "dra-objects.json", "slice.json"):
        documents.extend(yaml.safe_load((KIND / name).read_text())["items"])
    for doc in documents:
        published_v1(doc)


def test_allocation_results_are_valid_v1_claim_status(gpusched):
    report = gpusched("dra", "--cluster", "monday", "--objects", HARD, "--json").json()
    k8s_models.V1AllocationResult.model_validate(report["claims"][0]["allocation"])


def test_slices_as_a_yaml_list(gpusched):
    listed = yaml.safe_load(gpusched("slices", "monday", "-o", "yaml").stdout)
    assert listed["kind"] == "List"
    assert [d["metadata"]["name"] for d in listed["items"]] == [
        "dgx-a-gpu.example.com",
        "dgx-b-gpu.example.com",
        "pcie-a-gpu.example.com",
        "l4-a-gpu.example.com",
        "mig-a-gpu.example.com",
    ]


# --- bad input -----------------------------------------------------------------------------------------------------


def _objects_with(claim_spec=None, slice_spec=None, class_expression='device.driver == "gpu.example.com"'):
    cls = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": class_expression}}]},
    }
    docs = [cls]
    if claim_spec is not None:
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "ml"},
                "spec": {"devices": claim_spec},
            }
        )
    if slice_spec is not None:
        docs.append(
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": slice_spec}
        )
    return docs


def _one(count=1, cls="gpu", selectors=()):
    exactly = {"deviceClassName": cls, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"requests": [{"name": "gpus", "exactly": exactly}]}


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        (
            [{"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "x"}}],
            "o.yaml: kind: unknown apiVersion/kind resource.k8s.io/v1beta1/ResourceClaim: expected resource.k8s.io/v1",
        ),
        (
            _objects_with(_one(selectors=["device.driver =="])),
            "o.yaml: documents[1](ResourceClaim ml/c).spec.devices.requests[0].exactly.selectors[0].cel.expression: "
            "CEL compile error in resourceClaim ml/c: compilation failed: ERROR: <input>:1:17: Syntax error",
        ),
        (
            _objects_with(_one(count=0)),
            "o.yaml: documents[1](ResourceClaim ml/c).spec.devices.requests.0.exactly: "
            "count must be greater than zero, got 0",
        ),
        (
            _objects_with({**_one(), "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/x"}]}),
            "constraints[0].requests: gpu: must be the name of a request in the claim",
        ),
        (
            _objects_with(
                slice_spec={
                    "driver": "gpu.example.com",
                    "pool": {"name": "p", "resourceSliceCount": 1},
                    "nodeName": "dgx-a",
                    "devices": [{"name": "d"}, {"name": "d"}],
                }
            ),
            "o.yaml: documents[1](ResourceSlice s).spec: duplicate device name 'd'",
        ),
        (
            _objects_with(
                slice_spec={
                    "driver": "gpu.example.com",
                    "pool": {"name": "p", "resourceSliceCount": 1},
                    "nodeName": "dgx-a",
                    "devices": [{"name": "d", "capacity": {"memory": {"value": "80GB"}}}],
                }
            ),
            "capacity.memory.value: expected a quantity such as 4, 500m or 64Gi, got '80GB'",
        ),
        (
            _objects_with(_one(selectors=['device.attributes["gpu.example.com"].nosuch == 1'])),
            "o.yaml: documents[1](ResourceClaim ml/c).spec.devices.requests[0].exactly.selectors[0].cel.expression: "
            'running "DynamicResources" filter plugin: claim ml/c: selector #0 on device gpu.example.com/dgx-a/gpu-0: '
            "CEL runtime error: no such key: nosuch",
        ),
        (
            _objects_with(_one(), class_expression='device.attributes["gpu.example.com"].model > 3'),
            'o.yaml: (DeviceClass gpu).spec.selectors[0].cel.expression: running "DynamicResources" filter '
            "plugin: class gpu: selector #0 on device gpu.example.com/dgx-a/gpu-0: CEL runtime error: no such overload",
        ),
        (
            _objects_with(_one(selectors=['sign(quantity("4OGi")) > 0'])),
            "CEL runtime error: quantities must match the regular expression",
        ),
    ],
    ids=[
        "apiVersion",
        "cel-compile",
        "count",
        "constraint-request",
        "duplicate-device",
        "quantity",
        "cel-runtime",
        "class-cel-runtime",
        "cel-quantity",
    ],
)
def test_bad_objects_exit_2_naming_file_and_field(gpusched, write, monkeypatch, docs, expected):
    monkeypatch.chdir(write("o.yaml", yaml.safe_dump_all(docs)).parent)
    result = gpusched("dra", "--cluster", "monday", "--objects", "o.yaml")
    assert result.exit_code == 2, result.stdout
    assert expected in result.stderr
    assert result.stdout == ""


def test_missing_device_class_is_the_prefilter_message_exit_1(gpusched, write):
    docs = _objects_with(_one(cls="nope"))
    result = gpusched("dra", "--cluster", "monday", "--objects", write("o.yaml", yaml.safe_dump_all(docs)), "--json")
    assert result.exit_code == 1
    claim = result.json()["claims"][0]
    assert claim["reason"] == "request gpus: device class nope does not exist"
    assert claim["message"] == (
        "0/5 nodes are available: request gpus: device class nope does not exist. preemption: "
        "0/5 nodes are available: 5 Preemption is not helpful for scheduling."
    )


def test_duplicate_device_names_across_slices_of_a_pool_is_the_scheduler_reason(gpusched, write):
    docs = _objects_with(_one())
    for name in ("a", "b"):
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": {
                    "driver": "gpu.example.com",
                    "pool": {"name": "p", "resourceSliceCount": 2},
                    "nodeName": "x",
                    "devices": [{"name": "d"}],
                },
            }
        )
    result = gpusched("dra", "--objects", write("o.yaml", yaml.safe_dump_all(docs)), "--json")
    assert result.exit_code == 1
    claim = result.json()["claims"][0]
    assert claim["reason"] == "invalid resource pools were encountered"
    assert "pool gpu.example.com/p is invalid: duplicate device name d" in claim["diagnosis"]


def test_unknown_driver_and_missing_file(gpusched):
    assert (
        "Invalid value for '--driver': 'x' is not one of 'gpu.example.com', 'gpu.nvidia.com'"
        in gpusched("slices", "monday", "--driver", "x").stderr
    )
    result = gpusched("dra", "--cluster", "monday", "--objects", "no-such.yaml")
    assert result.exit_code == 2 and "no-such.yaml: no such file" in result.stderr


def test_k8s_pod_with_claims_needs_objects(gpusched):
    result = gpusched("k8s", "--nodes", KIND / "nodes.json", KIND / "dra.json")
    assert result.exit_code == 2 and "spec.resourceClaims: ResourceClaims need --objects" in result.stderr


def test_k8s_allocated_claim_pinned_elsewhere_is_not_available(gpusched, write):
    """The claim is allocated on another node: `resourceclaim not available on the node`; before 1.37 the PostFilter
    deallocates it (`deallocation of ResourceClaim completed`)."""
    claims = yaml.safe_load((KIND / "claims.json").read_text())
    pinned = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["other"]}]}]}
    claims["items"][0]["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpus", "driver": "gpu.example.com", "pool": "other", "device": "gpu-0"}]
            },
            "nodeSelector": pinned,
        }
    }
    args = [
        "k8s",
        "--nodes",
        KIND / "nodes.json",
        KIND / "dra.json",
        "--objects",
        KIND / "dra-objects.json",
        "--objects",
        write("claims.json", claims),
        "--objects",
        KIND / "slice.json",
    ]
    result = gpusched(*args, "--k8s-version", "1.36")
    assert result.exit_code == 1
    assert result.lines[-1] == (
        "FailedScheduling: 0/1 nodes are available: 1 resourceclaim not available on the node. deallocation of "
        "ResourceClaim completed, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_k8s_template_claim_is_stamped_for_the_pod(gpusched, write):
    claim = yaml.safe_load((KIND / "claims.json").read_text())["items"][0]
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "pair-template", "namespace": "gpu"},
        "spec": {"spec": claim["spec"]},
    }
    pod = yaml.safe_load((KIND / "dra.json").read_text())
    pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "pair-template"}]
    result = gpusched(
        "k8s",
        "--nodes",
        KIND / "nodes.json",
        write("pod.json", pod),
        "--objects",
        KIND / "dra-objects.json",
        "--objects",
        write("t.json", template),
        "--objects",
        KIND / "slice.json",
    )
    assert result.lines == [
        "fits: cc-lab-control-plane",
        "claim gpu/dra-gpus -> cc-lab-control-plane/gpu-0, cc-lab-control-plane/gpu-2",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give the DRA objects"),
        (("--objects", "seed-claims", "--context", "c"), "--context goes with --kubeconfig"),
        (("--kubeconfig", "k", "--cluster", "monday"), "drop --cluster"),
    ],
)
def test_dra_needs_objects_or_a_cluster_to_read_them_from(gpusched, args, message):
    result = gpusched("dra", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_a_device_taint_rule_over_every_device_blocks_claims_unless_tolerated(gpusched, write):
    """The rule's taint (empty selector: every device of the model's slices too) must be tolerated, as in 1.37."""
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "maintenance"},
            "spec": {"deviceSelector": {}, "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}}  # fmt: skip
    blocked = gpusched("dra", "--cluster", "monday", "--objects", write("o.yaml", yaml.safe_dump_all(
        [*_objects_with(_one()), rule])), "--json")  # fmt: skip
    assert blocked.exit_code == 1, blocked.stderr
    assert "cannot allocate all claims" in blocked.json()["claims"][0]["message"]
    tolerant = _one()
    tolerant["requests"][0]["exactly"]["tolerations"] = [{"key": "example.com/maintenance", "operator": "Exists"}]
    allowed = gpusched("dra", "--cluster", "monday", "--objects", write("t.yaml", yaml.safe_dump_all(
        [*_objects_with(tolerant), rule])), "--json")  # fmt: skip
    assert allowed.exit_code == 0, allowed.stderr
    result = allowed.json()["claims"][0]["allocation"]["devices"]["results"][0]
    assert result["tolerations"] == [{"key": "example.com/maintenance", "operator": "Exists"}]


def test_a_search_past_the_step_limit_is_the_schedulers_timeout_and_says_it_may_differ(gpusched, monkeypatch):
    """kube-scheduler gives a node's device search 10 s; gpusched gives it a number of devices tried, and says so."""
    monkeypatch.setenv("GPUSCHED_DRA_MAX_STEPS", "3")
    result = gpusched("dra", "--cluster", "monday", "--objects", "seed-claims")
    assert result.exit_code == 2
    assert 'running "DynamicResources" filter plugin: node ' in result.stderr
    assert "timed out trying to allocate devices" in result.stderr
    assert "not modelled: the search time" in result.stderr and "GPUSCHED_DRA_MAX_STEPS" in result.stderr
