"""End to end: a DeviceClass or claim whose selector the API server refuses (its types, its validators, its cost
limit) makes `gpusched dra` exit 2 naming the file, the field and the API server's words; `gpusched bench cel`."""

from __future__ import annotations

import pytest
import yaml

A = "device.attributes['gpu.example.com']"


def _documents(class_expression: str, claim_expression: str) -> list[dict]:
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
           "spec": {"selectors": [{"cel": {"expression": class_expression}}]}}  # fmt: skip
    exactly = {"deviceClassName": "gpu", "count": 1, "selectors": [{"cel": {"expression": claim_expression}}]}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}}  # fmt: skip
    return [cls, claim]


OK = "device.driver == 'gpu.example.com'"


@pytest.mark.parametrize(
    ("class_expression", "claim_expression", "expected"),
    [
        (
            OK,
            f"{A}.s.split(',').all(x, x.split(';').all(y, y.size() > 0))",
            "o.yaml: documents[1](ResourceClaim ml/c).spec.devices.requests[0].exactly.selectors[0].cel.expression: "
            "CEL compile error in resourceClaim ml/c: too complex, exceeds cost limit",
        ),
        (
            "device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, device.attributes.all(g, true))))",
            OK,
            "o.yaml: (DeviceClass gpu).spec.selectors[0].cel.expression: "
            "CEL compile error in class gpu: too complex, exceeds cost limit",
        ),
        (
            OK,
            f"[{A}.index, 6].max() == 6",
            "CEL compile error in resourceClaim ml/c: compilation failed: ERROR: <input>:1:46: "
            "expected type 'any' but found 'int'",
        ),
        (
            OK,
            f"'%d'.format([{A}.index]) == '1'",
            "error during formatting: decimal clause can only be used on integers, was given google.protobuf.Any",
        ),
        (OK, "device.driver", "CEL compile error in resourceClaim ml/c: must evaluate to bool or the unknown type"),
    ],
    ids=["claim-cost", "class-cost", "homogeneous", "format", "output-type"],
)
def test_what_the_api_server_refuses_exits_2(
    gpusched, write, monkeypatch, class_expression, claim_expression, expected
):
    monkeypatch.chdir(write("o.yaml", yaml.safe_dump_all(_documents(class_expression, claim_expression))).parent)
    result = gpusched("dra", "--cluster", "monday", "--objects", "o.yaml")
    assert result.exit_code == 2, result.stdout
    assert expected in result.stderr
    assert result.stdout == ""


def test_bench_cel(gpusched):
    result = gpusched("bench", "cel", "--selectors", "20", "--devices", "4", "--json")
    assert result.exit_code == 0, result.stderr
    bench = result.json()
    assert (bench["selectors"], bench["devices"], bench["refused"]) == (20, 4, 0)
    assert 0 < bench["matched"] < 80
    assert bench["compile_cpu_seconds"] >= 0 and bench["evaluate_cpu_seconds"] >= 0
    assert "20 selectors (0 refused): compiled in" in gpusched("bench", "cel", "--selectors", "20").stdout
