"""Benchmark: compiling and evaluating many distinct DRA device selectors, as a dump full of DeviceClasses and
claims makes gpusched do.

Compiling is what the API server's checks (celcheck: a second type check, the AST read back, the cost estimate)
add to; evaluating is the CEL library running each compiled selector on every device. Selectors are drawn from ten
shapes real drivers' classes and claims use, each with its own constants, so no two are alike.
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from ..models.dra import DeviceAttribute, DeviceCapacity
from ..planner.dra.cel import CelError, compile_selector, device_view, forget_compiled

__all__ = ["CelBench", "bench_cel", "bench_selectors"]

DRIVER = "gpu.example.com"
_A = f"device.attributes['{DRIVER}']"
_SHAPES = (
    "device.driver == 'gpu{i}.example.com'",
    _A + ".model == 'A100-{i}' && " + _A + ".memory > {i}",
    f"device.capacity['{DRIVER}'].memory.compareTo(quantity('{{i}}Gi')) >= 0",
    _A + ".?numa.orValue(0) == {i}",
    _A + ".model.startsWith('A{i}') || " + _A + ".model.matches('^H[0-9]+{i}$')",
    "semver(" + _A + ".driverVersion, true).isGreaterThan(semver('5{i}.0.0'))",
    "device.attributes.exists(d, d == 'vendor{i}.io')",
    "cidr('10.{j}.0.0/16').containsIP(" + _A + ".ip)",
    "[1, 2, {i}].exists(x, x == " + _A + ".index)",
    "'%d-gpu'.format([int(" + _A + ".index)]) == '{i}-gpu'",
)


class CelBench(BaseModel):
    selectors: int
    devices: int
    refused: int
    matched: int
    compile_seconds: float
    compile_cpu_seconds: float  # the process's CPU time: steadier than wall time on a shared machine
    evaluate_seconds: float
    evaluate_cpu_seconds: float


def bench_selectors(count: int) -> list[str]:
    return [_SHAPES[i % len(_SHAPES)].format(i=i, j=i % 256) for i in range(count)]


def _devices(count: int) -> list:
    views = []
    for index in range(count):
        attributes = {
            "model": DeviceAttribute.model_validate({"string": f"A100-{index}"}),
            "memory": DeviceAttribute.model_validate({"int": 80 + index}),
            "index": DeviceAttribute.model_validate({"int": index}),
            "ip": DeviceAttribute.model_validate({"string": f"10.{index % 256}.0.{index % 250 + 1}"}),
            "driverVersion": DeviceAttribute.model_validate({"string": f"5{index % 10}.1.0"}),
        }
        capacity = {"memory": DeviceCapacity.model_validate({"value": f"{40 + index}Gi"})}
        views.append(device_view(f"{DRIVER}/pool/gpu-{index}", DRIVER, attributes, capacity))
    return views


def bench_cel(selectors: int = 2000, devices: int = 64) -> CelBench:
    """Compile `selectors` distinct selectors (none cached), then run each on `devices` devices."""
    expressions, views = bench_selectors(selectors), _devices(devices)
    forget_compiled()
    began, cpu = time.perf_counter(), time.process_time()
    compiled = []
    for expression in expressions:
        try:
            compiled.append(compile_selector(expression))
        except CelError:
            pass
    compile_seconds, compile_cpu = time.perf_counter() - began, time.process_time() - cpu
    began, cpu = time.perf_counter(), time.process_time()
    matched = 0
    for selector in compiled:
        for view in views:
            try:
                matched += selector.matches(view)
            except CelError:
                pass
    evaluate_seconds, evaluate_cpu = time.perf_counter() - began, time.process_time() - cpu
    return CelBench(
        selectors=selectors,
        devices=devices,
        refused=selectors - len(compiled),
        matched=matched,
        compile_seconds=round(compile_seconds, 3),
        compile_cpu_seconds=round(compile_cpu, 3),
        evaluate_seconds=round(evaluate_seconds, 3),
        evaluate_cpu_seconds=round(evaluate_cpu, 3),
    )
