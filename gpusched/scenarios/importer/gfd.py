"""The labels NVIDIA GPU Feature Discovery, the device plugin and the GPU Operator put on a node.

Facts, from NVIDIA/k8s-device-plugin (docs/gpu-feature-discovery/README.md "Generated Labels", the MIG 'single' and
'mixed' strategy sections, README "Catalog of Labels", internal/lm/resource.go, mig-strategy.go, imex.go,
internal/resource/nvml-mig-device.go) and NVIDIA/cloud-native-docs (gpu-operator/gpu-operator-mig.rst,
gpu-sharing.rst, manifests/output/mig-mixed-node-labels.json):

- `nvidia.com/gpu.product`: the NVML device name with spaces turned into `-` and characters other than letters,
  digits, `-`, `_`, `.` dropped (`NVIDIA H100 80GB HBM3` -> `NVIDIA-H100-80GB-HBM3`). Under the MIG `single`
  strategy `-MIG-<profile>` is appended; when GPUs are shared (time-slicing or MPS) without renaming, `-SHARED`.
- `nvidia.com/gpu.count`: GPUs of that product (under `single`: MIG devices); `nvidia.com/gpu.memory`: MiB per GPU
  (under `single`: per MIG device).
- `nvidia.com/gpu.replicas`: shared accesses per GPU (1 unshared; 0 where sharing is off, as on MIG-enabled GPUs);
  `nvidia.com/gpu.sharing-strategy`: `none`, `time-slicing` or `mps`.
- `nvidia.com/mig.strategy`: `single` or `mixed`; under `mixed`, per profile `nvidia.com/mig-<profile>.count` and
  `.memory`, a `+` in a profile name written `.` (`1g.10gb+me` -> `mig-1g.10gb.me`). `nvidia.com/mig.capable`.
- GPU Operator MIG manager: `nvidia.com/mig.config` (the mig-parted configuration asked for) and
  `nvidia.com/mig.config.state` (`pending`, `rebooting`, `success`, `failed`).
- `nvidia.com/gpu.machine`: the machine's DMI product name; `nvidia.com/gpu.family`, `gpu.compute.major/minor`;
  `nvidia.com/gpu.clique`: `<fabric cluster UUID>.<clique ID>` on GPUs attached to a multi-node NVLink fabric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["GfdLabels", "mig_profile_name", "model_name", "read_labels"]

PREFIX = "nvidia.com/"
_MIG_COUNT = re.compile(r"^nvidia\.com/mig-(.+)\.count$")
_SANITISE = re.compile(r"[^A-Za-z0-9\-_. ]")


@dataclass(frozen=True)
class GfdLabels:
    """The GPU facts a node's labels carry; `None` where the label is absent or unreadable."""

    product: str | None = None  # published product, suffixes included
    model: str | None = None  # gpusched's model name: the product without NVIDIA-, -MIG-..., -SHARED
    single_profile: str | None = None  # the MIG profile named in the product under the single strategy
    count: int | None = None
    memory_mib: int | None = None
    replicas: int | None = None
    sharing: str | None = None
    mig_strategy: str | None = None
    mig_counts: dict[str, int] = field(default_factory=dict)
    mig_capable: bool | None = None
    mig_config: str | None = None
    mig_config_state: str | None = None
    machine: str | None = None
    clique: str | None = None
    family: str | None = None
    unreadable: tuple[str, ...] = ()  # labels present but not as documented, e.g. a count that is not a number

    @property
    def any(self) -> bool:
        return self.product is not None or self.count is not None


def model_name(product: str) -> str:
    """gpusched's model name for an NVML device name or a product label: sanitised as GFD does, NVIDIA- dropped."""
    sanitised = "-".join(_SANITISE.sub("", product).split())
    return sanitised.removeprefix("NVIDIA-")


def mig_profile_name(published: str) -> str:
    """A profile as labels and resource names write it (`1g.10gb.me`) -> as nvidia-smi names it (`1g.10gb+me`)."""
    return published[: -len(".me")] + "+me" if published.endswith(".me") else published


def read_labels(labels: dict[str, str]) -> GfdLabels:
    unreadable: list[str] = []

    def number(key: str) -> int | None:
        value = labels.get(PREFIX + key)
        if value is None:
            return None
        if not value.isdigit():
            unreadable.append(f"{PREFIX}{key}={value!r} is not a whole number")
            return None
        return int(value)

    product = labels.get(PREFIX + "gpu.product")
    model, single = _split_product(product) if product else (None, None)
    capable = labels.get(PREFIX + "mig.capable")
    found = GfdLabels(
        product=product,
        model=model,
        single_profile=single,
        count=number("gpu.count"),
        memory_mib=number("gpu.memory"),
        replicas=number("gpu.replicas"),
        sharing=labels.get(PREFIX + "gpu.sharing-strategy"),
        mig_strategy=labels.get(PREFIX + "mig.strategy"),
        mig_counts=_mig_counts(labels, unreadable),
        mig_capable=None if capable is None else capable == "true",
        mig_config=labels.get(PREFIX + "mig.config"),
        mig_config_state=labels.get(PREFIX + "mig.config.state"),
        machine=labels.get(PREFIX + "gpu.machine"),
        clique=labels.get(PREFIX + "gpu.clique") or None,
        family=labels.get(PREFIX + "gpu.family"),
    )
    return GfdLabels(**{**found.__dict__, "unreadable": tuple(unreadable)})


def _split_product(product: str) -> tuple[str, str | None]:
    """`NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED` -> (`A100-SXM4-40GB`, `1g.5gb`)."""
    base = product.removesuffix("-SHARED")
    base, _, profile = base.partition("-MIG-")
    single = mig_profile_name(profile) if profile and profile != "INVALID" else None
    return model_name(base), single


def _mig_counts(labels: dict[str, str], unreadable: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for key, value in sorted(labels.items()):
        match = _MIG_COUNT.match(key)
        if not match:
            continue
        if not value.isdigit():
            unreadable.append(f"{key}={value!r} is not a whole number")
            continue
        if int(value):
            counts[mig_profile_name(match.group(1))] = int(value)
    return counts
