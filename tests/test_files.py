"""The one writer: what it refuses before any work, and that a command's outputs land all together or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpusched.errors import InputError
from gpusched.files import check_target, write_files


def test_check_target_refuses_what_cannot_be_replaced_whole(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("")
    refused = {
        "": "empty",
        str(tmp_path / "fifo"): "is a FIFO",
        str(tmp_path / "folder"): "is a directory",
        str(tmp_path / "missing" / "out"): "does not exist",
        str(tmp_path / "file" / "out"): "is not a folder",
        str(tmp_path / ("x" * 300)): "too long|longer than",
        "a\0b": "NUL",
    }
    if Path("/dev/full").exists():
        refused["/dev/full"] = "is a device"
    for target, why in refused.items():
        with pytest.raises(InputError, match=why):
            check_target(target)
    check_target(str(tmp_path / "new.yaml"))
    check_target(str(tmp_path / "file"))
    check_target(os.devnull)


def test_write_files_writes_none_when_one_target_is_refused(tmp_path: Path) -> None:
    first = tmp_path / "c.yaml"
    (tmp_path / "pods").mkdir()
    with pytest.raises(InputError, match="pods"):
        write_files([(str(first), "cluster"), (str(tmp_path / "pods"), "pods")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pods"]


def test_write_files_replaces_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    write_files([(str(target), "new"), (str(tmp_path / "b.bin"), b"\x00"), (os.devnull, "gone")])
    assert target.read_text() == "new" and (tmp_path / "b.bin").read_bytes() == b"\x00"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
