"""What `nvidia-smi` prints on a node, captured to a file: `topo -m` (which GPUs share NVLink), `-q -x` (the GPUs),
and `mig -lgi` / `mig -lci` (the MIG instances: gpusched.scenarios.importer.nvsmi_mig).

Formats, from NVIDIA's output as shown in public captures (sources in tests/data/nvidia-smi/*):
- `nvidia-smi topo -m`: a header row of device columns (GPU0 GPU1 ... then NICs such as mlx5_0 or NIC0, then
  `CPU Affinity`, `NUMA Affinity`, ...), one row per device, one cell per column: `X` (self), `NV#` (a bonded set of
  # NVLinks), or a PCIe/CPU path (PIX, PXB, PHB, NODE, SYS, older drivers SOC). Cells are separated by tabs or
  spaces; terminals may add ANSI colour codes.
- `nvidia-smi -q -x`: XML, root `<nvidia_smi_log>` with `<attached_gpus>` and one `<gpu>` per GPU in index order
  (`<product_name>`, `<minor_number>`, `<fb_memory_usage><total>81920 MiB</total>`, `<mig_mode><current_mig>`,
  `<mig_devices>`). MIG devices carry memory but no profile name, so only their number and memory are read.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from ...errors import InputError
from ...files import read_bytes
from .nvsmi_mig import SmiComputeInstances, SmiGpuInstances, is_mig_listing, parse_mig_listing

__all__ = ["Capture", "SmiGpu", "SmiLog", "SmiTopology", "parse_smi_log", "parse_topology", "read_capture"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU = re.compile(r"^GPU(\d+)$")
_NVLINK = re.compile(r"^NV(\d+)$")
_PATH = re.compile(r"^[A-Z]{2,5}$")  # PIX, PXB, PHB, NODE, SYS, SOC, and whatever PCIe path names come next
_MIB = re.compile(r"^(\d+)\s*MiB$")


@dataclass(frozen=True)
class SmiTopology:
    """`nvidia-smi topo -m`: how many GPUs, and how many bonded NVLinks join each pair that has any."""

    source: str
    gpus: int
    links: dict[tuple[int, int], int]  # (i, j), i < j -> NVLinks between them

    def islands(self) -> list[list[int]]:
        """Connected components over NVLink: GPUs a ring can join without leaving NVLink (islands of one omitted)."""
        parent = list(range(self.gpus))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for i, j in self.links:
            parent[root(i)] = root(j)
        groups: dict[int, list[int]] = {}
        for i in range(self.gpus):
            groups.setdefault(root(i), []).append(i)
        return sorted((members for members in groups.values() if len(members) > 1), key=lambda m: m[0])

    def fewest_links(self) -> int | None:
        """The smallest bonded set on any NVLink pair: what the slowest hop of a ring inside an island gets."""
        return min(self.links.values(), default=None)


@dataclass(frozen=True)
class SmiGpu:
    index: int
    product: str
    memory_mib: int | None
    mig_enabled: bool
    mig_devices: tuple[int, ...]  # memory (MiB) of each MIG device; nvidia-smi -q -x names no profile


@dataclass(frozen=True)
class SmiLog:
    """`nvidia-smi -q -x`: the GPUs of one node."""

    source: str
    gpus: tuple[SmiGpu, ...]


Capture = SmiTopology | SmiLog | SmiGpuInstances | SmiComputeInstances


def read_capture(path: str) -> Capture:
    """A file captured from a node: XML is read as `-q -x`, a MIG listing as `mig -lgi`/`-lci`, anything else as
    `topo -m`."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            path,
            f"not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}): "
            "expected what `nvidia-smi topo -m`, `nvidia-smi -q -x` or `nvidia-smi mig -lgi` prints",
        ) from None
    if text.lstrip().startswith("<"):
        return parse_smi_log(text, path)
    if is_mig_listing(text):
        return parse_mig_listing(text, path)
    return parse_topology(text, path)


def parse_topology(text: str, source: str) -> SmiTopology:
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.split()[:1] == ["GPU0"]), None)
    if start is None:
        raise InputError(source, "not `nvidia-smi topo -m` output: no header row beginning with GPU0")
    columns = _columns(lines[start].split())
    gpus = _gpu_count(columns, source)
    rows = _rows(lines[start + 1 :], columns)
    cells: list[list[str]] = []
    for index in range(gpus):
        row = rows.get(f"GPU{index}")
        if row is None:
            raise InputError(source, f"truncated: no row for GPU{index} ({gpus} GPU columns in the header)")
        if len(row) < len(columns):
            raise InputError(source, f"truncated: row GPU{index} has {len(row)} of {len(columns)} cells")
        cells.append(row[:gpus])
    return SmiTopology(source, gpus, _links(cells, source))


def _columns(header: list[str]) -> list[str]:
    """Device columns: everything before `CPU Affinity` (the affinity columns are always last)."""
    return header[: header.index("CPU")] if "CPU" in header else header


def _gpu_count(columns: list[str], source: str) -> int:
    gpus = [column for column in columns if _GPU.match(column)]
    if gpus != [f"GPU{i}" for i in range(len(gpus))] or columns[: len(gpus)] != gpus:
        raise InputError(source, f"not `nvidia-smi topo -m` output: GPU columns {gpus} are not GPU0, GPU1, ... first")
    return len(gpus)


def _rows(lines: list[str], columns: list[str]) -> dict[str, list[str]]:
    """Matrix rows by label, up to the legend."""
    rows: dict[str, list[str]] = {}
    for line in lines:
        tokens = line.split()
        if not tokens or tokens[0].startswith("Legend"):
            if rows:
                break
            continue
        if tokens[0] in columns:
            rows[tokens[0]] = tokens[1:]
    return rows


def _links(cells: list[list[str]], source: str) -> dict[tuple[int, int], int]:
    links: dict[tuple[int, int], int] = {}
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if i == j:
                if cell != "X":
                    raise InputError(source, f"not `nvidia-smi topo -m` output: GPU{i} to itself is {cell!r}, not X")
                continue
            nvlink = _NVLINK.match(cell)
            if not nvlink and not _PATH.match(cell):
                raise InputError(
                    source,
                    f"unexpected cell {cell!r} between GPU{i} and GPU{j} (expected NV#, PIX, PXB, PHB, NODE or SYS)",
                )
            if cells[j][i] != cell:
                raise InputError(
                    source, f"matrix disagrees: GPU{i} to GPU{j} is {cell}, GPU{j} to GPU{i} is {cells[j][i]}"
                )
            if nvlink and i < j:
                links[(i, j)] = int(nvlink.group(1))
    return links


def parse_smi_log(text: str, source: str) -> SmiLog:
    if "<!ENTITY" in text:
        raise InputError(source, "XML declares entities, which nvidia-smi never does: refused")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        line, column = error.position
        raise InputError(source, f"malformed or truncated XML at line {line} column {column + 1}") from None
    if root.tag != "nvidia_smi_log":
        raise InputError(
            source, f"XML, but not `nvidia-smi -q -x` output: root element <{root.tag}>, expected <nvidia_smi_log>"
        )
    elements = root.findall("gpu")
    attached = (root.findtext("attached_gpus") or "").strip()
    if attached.isdigit() and int(attached) != len(elements):
        raise InputError(source, f"truncated: <attached_gpus> says {attached}, found {len(elements)} <gpu> elements")
    if not elements:
        raise InputError(source, "no <gpu> elements: nothing to read")
    return SmiLog(source, tuple(_smi_gpu(element, index, source) for index, element in enumerate(elements)))


def _smi_gpu(element: ET.Element, index: int, source: str) -> SmiGpu:
    product = (element.findtext("product_name") or "").strip()
    if not product:
        raise InputError(source, f"<gpu> number {index} has no <product_name>")
    devices = element.findall("mig_devices/mig_device")
    return SmiGpu(
        index=index,
        product=product,
        memory_mib=_mib(element.findtext("fb_memory_usage/total")),
        mig_enabled=(element.findtext("mig_mode/current_mig") or "").strip() == "Enabled",
        mig_devices=tuple(m for m in (_mib(d.findtext("fb_memory_usage/total")) for d in devices) if m is not None),
    )


def _mib(text: str | None) -> int | None:
    match = _MIB.match((text or "").strip())
    return int(match.group(1)) if match else None
