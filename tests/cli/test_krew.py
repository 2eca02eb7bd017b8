"""The krew manifest: krew's required fields, the archive scripts/krew-archive builds (its sha256), the plugin's
name and version as the package has them, and the wrapper it installs runs the plugin."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = yaml.safe_load((ROOT / "plugins" / "krew" / "gpusched.yaml").read_text())


def test_the_manifest_has_what_krew_requires():
    assert MANIFEST["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2" and MANIFEST["kind"] == "Plugin"
    spec = MANIFEST["spec"]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert MANIFEST["metadata"]["name"] == "gpusched" and spec["version"] == f"v{version}"
    assert spec["shortDescription"] and spec["description"] and spec["platforms"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for platform in spec["platforms"]:
        assert platform["bin"] in scripts and platform["bin"] == "kubectl-gpusched"
        assert platform["uri"].endswith(".tar.gz") and len(platform["sha256"]) == 64


def test_the_sha256_is_the_archive_the_script_builds(tmp_path):
    built = subprocess.run([sys.executable, ROOT / "scripts" / "krew-archive", tmp_path], capture_output=True,
                           text=True, check=True)  # fmt: skip
    digest = hashlib.sha256((tmp_path / "kubectl-gpusched.tar.gz").read_bytes()).hexdigest()
    assert built.stdout.strip() == digest == MANIFEST["spec"]["platforms"][0]["sha256"]


def test_the_wrapper_runs_the_plugin(tmp_path):
    import os

    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    done = subprocess.run(["sh", ROOT / "plugins" / "krew" / "kubectl-gpusched", "--version"], capture_output=True,
                          text=True, env=env, check=False)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("gpusched "), done.stderr
