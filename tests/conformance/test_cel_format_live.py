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


# Runtime errors, in a CRD rule (`self.s` is "abc", `self.f` true) and in a device selector (the same values as
# attributes): the API server's cel-go and gpusched give the same words.
ERRORS = ["self.s.substring(1, 100) == ''", "self.s.substring(3, 2) == ''", "int(self.s) == 1",
          "self.s.matches(self.s + '(')", "self.s.charAt(10) == ''", "cidr(self.s).prefixLength() == 1",
          "self.s.find(self.s + '(') == ''", "bool(self.s)", "'%d'.format([dyn(self.f)]) == ''",
          "timestamp(self.s) > timestamp(0)", "ip(self.s + ':').family() == 4", "url(self.s).getHost() == ''",
          "semver(self.s).major() == 1", "{'a': 1}[self.s] == 1"]  # fmt: skip


def _gpusched_error(rule: str) -> str:
    from gpusched.models.dra import DeviceAttribute
    from gpusched.planner.dra.cel import CelError, compile_selector, device_view

    attributes = {"s": DeviceAttribute(string_value="abc"), "f": DeviceAttribute(bool_value=True)}
    device = device_view("x.io/n/d", "x.io", attributes, {})
    expression = rule.replace("self.s", "string(device.attributes['x.io'].s)").replace(
        "self.f", "device.attributes['x.io'].f"
    )
    try:
        compile_selector(expression).matches(device)
    except CelError as error:
        return str(error)
    return "(no error)"


def test_runtime_errors_are_cel_gos(rest):
    body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "celerrors.gpusched.test"},
            "spec": {"group": "gpusched.test", "scope": "Cluster",
                     "names": {"plural": "celerrors", "singular": "celerror", "kind": "CelError"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": {"type": "object", "properties": {
                             "s": {"type": "string", "maxLength": 20}, "f": {"type": "boolean"}},
                             "x-kubernetes-validations": [{"rule": rule} for rule in ERRORS]}}}}}]}}  # fmt: skip
    rest.create(CRD, body)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                rest.create("/apis/gpusched.test/v1/celerrors", {"apiVersion": "gpusched.test/v1", "kind": "CelError",
                            "metadata": {"name": "e"}, "spec": {"s": "abc", "f": True}})  # fmt: skip
                raise AssertionError("every rule should fail")
            except RestError as error:
                real = {rule: message for message, rule in re.findall(r'Invalid value: "object": (.*?) evaluating rule: (.*?)(?=, spec|\]$|$)',
                                       str(error))}  # fmt: skip
                if real or time.monotonic() > deadline:
                    break
                time.sleep(1)
        assert set(real) == set(ERRORS)
        for rule in ERRORS:
            assert _gpusched_error(rule) == real[rule], rule
    finally:
        rest.delete(f"{CRD}/celerrors.gpusched.test")
