"""CEL `format` as the real API server evaluates it (the same cel-go strings library the scheduler runs): a CRD
validation rule `self.s == '<format>'.format([self.d])` accepts an object exactly when gpusched's string is the one
cel-go makes."""

from __future__ import annotations

import re
import time

from gpusched.conformance.api import RestError
from gpusched.planner.dra.celstrings import format_string

CASES = [("%e", 1.5), ("%.3e", 12345.678), ("%.20e", -1.5e-7), ("%.0e", 5.0), ("%e", 0.0), ("%e", 1e100),
         ("%.12e", 2.5), ("%f", 1234567.8), ("%.2f", -1234.5), ("%s", 1234567.0), ("%s", 0.000000002),
         ("%d", 42)]  # fmt: skip
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd() -> dict:
    props: dict = {}
    for i, (_, value) in enumerate(CASES):
        props[f"s{i}"] = {"type": "string", "maxLength": 200}
        props[f"d{i}"] = {"type": "integer" if isinstance(value, int) else "number"}
    rules = [{"rule": f"self.s{i} == '{text}'.format([self.d{i}])"} for i, (text, _) in enumerate(CASES)]
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props,
                                                        "x-kubernetes-validations": rules}}}  # fmt: skip
    names = {"plural": "formatprobes", "singular": "formatprobe", "kind": "FormatProbe"}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "formatprobes.gpusched.test"},
            "spec": {"group": "gpusched.test", "scope": "Cluster", "names": names, "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]}}  # fmt: skip


def test_format_strings_are_cel_gos(rest):
    rest.create(CRD, _crd())
    try:
        spec = {}
        for i, (text, value) in enumerate(CASES):
            spec[f"s{i}"], spec[f"d{i}"] = format_string(text, [value]), value
        body = {"apiVersion": "gpusched.test/v1", "kind": "FormatProbe", "metadata": {"name": "p"}, "spec": spec}
        deadline = time.monotonic() + 30
        while True:
            try:
                rest.create("/apis/gpusched.test/v1/formatprobes", body)
                break
            except RestError as error:
                failed = sorted({int(i) for i in re.findall(r"self\.s(\d+) ==", str(error))})
                assert not failed, [CASES[i] for i in failed]
                if time.monotonic() > deadline:  # the resource is served once the CRD is established
                    raise
                time.sleep(1)
    finally:
        rest.delete(f"{CRD}/formatprobes.gpusched.test")
