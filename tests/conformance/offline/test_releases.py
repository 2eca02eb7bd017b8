"""Several releases from one conformance module: which files pin each, the keys, and `--k8s-version` (no build)."""

from __future__ import annotations

import shutil

import pytest

from gpusched.conformance.build import HarnessError, find_source, release, releases


@pytest.fixture
def module(tmp_path):
    """A copy of the conformance module's small files (no Go build happens here)."""
    source = find_source()
    copy = tmp_path / "conformance"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("*.partial*"))
    return copy


def test_go_mod_pins_the_newest_and_releases_the_older_ones():
    found = releases()
    assert [r.pin for r in found] == ["v1.34.4", "v1.35.4", "v1.37.2"]
    assert found[-1].modfile.name == "go.mod" and found[-1].go_flags() == []
    assert [r.go_flags() for r in found[:2]] == [["-modfile=releases/v1.34.mod"], ["-modfile=releases/v1.35.mod"]]
    assert all(r.modfile.with_suffix(".sum").is_file() for r in found)


@pytest.mark.parametrize("asked", ["1.35", "1.35.4", "v1.35.4", " 1.35 "])
def test_k8s_version_names_a_release_by_minor_or_exact_patch(asked):
    assert release(asked).pin == "v1.35.4"


def test_no_version_is_the_newest():
    assert release(None).pin == "v1.37.2"


@pytest.mark.parametrize("asked", ["1.36", "1.35.3", "1.33", "x"])
def test_a_release_the_module_does_not_build_is_refused_with_what_it_builds(asked):
    with pytest.raises(
        HarnessError, match=r"no control plane for that release .*builds v1\.34\.4, v1\.35\.4, v1\.37\.2"
    ):
        release(asked)


def test_editing_one_release_changes_its_key_only(module):
    before = {r.pin: r.key for r in releases(module)}
    with (module / "releases" / "v1.35.mod").open("a") as out:
        out.write("\n// edited\n")
    after = {r.pin: r.key for r in releases(module)}
    assert after["v1.35.4"] != before["v1.35.4"] and after["v1.37.2"] == before["v1.37.2"]
    (module / "cmd" / "etcd" / "main.go").write_text("package main\n")  # the mains are shared: both rebuild
    again = {r.pin: r.key for r in releases(module)}
    assert all(again[pin] != after[pin] for pin in again)


def test_two_files_pinning_one_minor_are_refused(module):
    shutil.copy(module / "releases" / "v1.35.mod", module / "releases" / "v1.35-copy.mod")
    with pytest.raises(HarnessError, match="each releases/\\*.mod another minor"):
        releases(module)


def test_the_cli_refuses_an_unbuilt_release_with_exit_2(gpusched):
    for command in (("cluster", "build"), ("cluster", "up"), ("conformance",)):
        result = gpusched(*command, "--k8s-version", "1.36")
        assert result.exit_code == 2, command
        assert "--k8s-version 1.36: no control plane for that release" in result.stderr
