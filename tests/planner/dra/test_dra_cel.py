"""CEL selectors in Kubernetes' environment: device variables, unknown domains, runtime errors, Quantity, Semver,
string extensions, and compile errors, each evaluated by the real CEL library."""

from __future__ import annotations

import pytest

from gpusched.models.dra import DeviceAttribute, DeviceCapacity
from gpusched.planner.dra.cel import CelError, compile_selector, device_view

D = "gpu.example.com"


def gpu():
    attributes = {
        "model": DeviceAttribute(string_value="A100-SXM4-80GB"),
        "index": DeviceAttribute(int_value=3),
        "timeSliced": DeviceAttribute(bool_value=False),
        "driverVersion": DeviceAttribute(version_value="550.54.15"),
        "resource.kubernetes.io/pcieRoot": DeviceAttribute(string_value="pci0000:00"),
    }
    return device_view(f"{D}/n/gpu-3", D, attributes, {"memory": DeviceCapacity(value="80Gi")})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'device.driver == "{D}"', True),
        (f'device.attributes["{D}"].model == "A100-SXM4-80GB"', True),  # unprefixed names live in the driver's domain
        ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:00"', True),
        (f'device.attributes["{D}"].index > 2 && !device.attributes["{D}"].timeSliced', True),
        ('device.attributes["other.io"].size() == 0', True),  # an unknown domain is an empty map
        ('device.attributes["other.io"].x == 1 || true', True),  # error || true is true
        ('false && device.attributes["other.io"].x == 1', False),  # false && error is false
        (f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0', True),
        (f'device.capacity["{D}"].memory.isGreaterThan(quantity("80Gi"))', False),
        (f'device.capacity["{D}"].memory.isLessThan(quantity("81Gi"))', True),
        (f'device.capacity["{D}"].memory == quantity("81920Mi")', True),  # value equality
        (f'device.capacity["{D}"].memory.asInteger() == 85899345920', True),
        ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', True),
        ('quantity("200M").compareTo(quantity("0.2G")) == 0 && quantity("1.5").isInteger() == false', True),
        ('isQuantity("1.3Gi") && !isQuantity("200K") && sign(quantity("-1")) == -1', True),
        (f'device.attributes["{D}"].driverVersion.isGreaterThan(semver("535.0.0"))', True),
        (
            f'device.attributes["{D}"].driverVersion.major() == 550 && semver("1.2.3-rc.1").isLessThan(semver("1.2.3"))',
            True,
        ),
        ('isSemver("1.2.3") && !isSemver("v1.2")', True),
        (f'device.attributes["{D}"].model.lowerAscii().startsWith("a100") && "a,b".split(",").size() == 2', True),
        (f'device.attributes["{D}"].model.matches("^A100-(SXM|PCIE)")', True),
    ],
)
def test_selectors(expression, expected):
    assert compile_selector(expression).matches(gpu()) is expected


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        (f'device.attributes["{D}"].nosuch == 1', "no such key: nosuch"),
        ('device.attributes["other.io"].x == 1', "no such key: x"),
        (f'device.attributes["{D}"].index < "x"', "no such overload"),
        (f'device.attributes["{D}"].model', "CEL result of type string could not be converted to bool"),
        ('sign(quantity("4OGi")) == 1', "quantities must match the regular expression"),
        ('quantity("1.5").asInteger() == 1', "cannot convert value to integer"),
        ('semver("v1") == semver("1.0.0")', "No Major.Minor.Patch elements found"),
    ],
)
def test_runtime_errors_are_errors_not_mismatches(expression, error):
    with pytest.raises(CelError, match=error.replace("(", r"\(").replace(".", r"\.")):
        compile_selector(expression).matches(gpu())


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error"),
        ("nosuch(device)", "undeclared reference to 'nosuch'"),
        ('device.attribute["x"].y == 1', "undefined field 'attribute'"),
    ],
)
def test_compile_errors(expression, error):
    with pytest.raises(CelError, match=error):
        compile_selector(expression)


def test_a_string_that_mentions_a_field_is_not_a_field():
    assert compile_selector('device.driver != "device.nosuch"').matches(gpu()) is True


def test_compiled_once_per_expression():
    assert compile_selector("device.driver != ''") is compile_selector("device.driver != ''")
