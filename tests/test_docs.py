"""The docs show real output too: their console blocks run in order, in a folder holding a kubectl dump under the
names the runbook uses (nodes.json, pods.json, slices.json, topology/), and are compared line by line."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "tests" / "data" / "import"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def _blocks(doc: Path) -> list[tuple[str, list[str]]]:
    found = []
    for block in re.findall(r"```console\n(.*?)```", doc.read_text(), re.S):
        command, *output = block.rstrip("\n").split("\n")
        assert command.startswith("$ gpusched "), command
        found.append((command[2:], output))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[doc.name for doc in DOCS])
def test_doc_output_is_real(gpusched, monkeypatch, tmp_path, doc):
    for name, copy in (
        ("nodes.json", "nodes.json"),
        ("pods.json", "pods.json"),
        ("resourceslices.json", "slices.json"),
    ):
        shutil.copy(DUMP / name, tmp_path / copy)
    shutil.copytree(DUMP / "topology", tmp_path / "topology")
    monkeypatch.chdir(tmp_path)
    blocks = _blocks(doc)
    assert blocks, f"{doc.name} has no console block"
    for command, expected in blocks:
        result = gpusched(*shlex.split(command)[1:])
        assert [line.rstrip() for line in result.lines] == [line.rstrip() for line in expected], command
