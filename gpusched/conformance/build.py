"""Build the control plane once per pin into a cache outside git: ~/.cache/gpusched/conformance/<key>/bin.

The key is the Kubernetes version in conformance/go.mod plus a digest of the Go module's files, so editing the pin
(or a main.go) builds again and nothing else does. Go's own module and build caches are the user's (`go env`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["BINARIES", "Binaries", "HarnessError", "find_source", "pin", "build_key", "cache_root", "ensure_built"]

BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
MODULE = "module gpusched/conformance"
_PIN = re.compile(r"^\s*k8s\.io/kubernetes (v\d+\.\d+\.\d+)\s*$", re.M)


class HarnessError(RuntimeError):
    """The harness cannot build or run the control plane; the CLI prints it and exits 2."""


class Binaries(BaseModel):
    pin: str = Field(description="the k8s.io/kubernetes version built, e.g. v1.37.2")
    key: str = Field(description="pin plus a digest of the Go module: the cache folder's name")
    bin_dir: Path
    built: bool = Field(description="true when this call compiled them, false when the cache had them")
    seconds: float = Field(description="time spent building (0 on a cache hit)")

    def path(self, name: str) -> Path:
        return self.bin_dir / name


def _is_module(folder: Path) -> bool:
    go_mod = folder / "go.mod"
    return go_mod.is_file() and MODULE in go_mod.read_text()


def find_source(explicit: str | Path | None = None) -> Path:
    """The Go module: given, $GPUSCHED_CONFORMANCE_SRC, `conformance/` above the working directory or the package."""
    if explicit or os.environ.get("GPUSCHED_CONFORMANCE_SRC"):
        folder = Path(explicit or os.environ["GPUSCHED_CONFORMANCE_SRC"]).resolve()
        if not _is_module(folder):
            raise HarnessError(f"{folder}: not the gpusched conformance Go module (no go.mod saying {MODULE!r})")
        return folder
    starts = [Path.cwd().resolve(), Path(__file__).resolve().parent]
    for start in starts:
        for folder in (start, *start.parents):
            if _is_module(folder / "conformance"):
                return folder / "conformance"
    raise HarnessError(
        "the conformance Go module (conformance/go.mod in a gpusched checkout) was not found: "
        "run from the checkout or set GPUSCHED_CONFORMANCE_SRC"
    )


def _module_files(source: Path) -> list[Path]:
    return sorted([source / "go.mod", source / "go.sum", *source.glob("cmd/*/*.go")])


def pin(source: Path) -> str:
    found = _PIN.search((source / "go.mod").read_text())
    if not found:
        raise HarnessError(f"{source / 'go.mod'}: no `k8s.io/kubernetes vX.Y.Z` requirement")
    return found.group(1)


def build_key(source: Path) -> str:
    digest = hashlib.sha256()
    for path in _module_files(source):
        digest.update(path.relative_to(source).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{pin(source)}-{digest.hexdigest()[:12]}"


def cache_root() -> Path:
    """$GPUSCHED_CACHE_DIR, else $XDG_CACHE_HOME/gpusched, else ~/.cache/gpusched; then conformance/."""
    base = os.environ.get("GPUSCHED_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "gpusched"
    )
    return Path(base) / "conformance"


def _ldflags(version: str) -> str:
    """Without the version stamped in, /version reports v0.0.0."""
    major, minor = version.lstrip("v").split(".")[:2]
    stamp = "k8s.io/component-base/version"
    return f"-s -w -X {stamp}.gitVersion={version} -X {stamp}.gitMajor={major} -X {stamp}.gitMinor={minor}"


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise HarnessError("go not found: building the conformance control plane needs Go 1.26 or newer on PATH")
    return go


def _compile(source: Path, version: str, target: Path, log: Path) -> None:
    """One `go build` for all four mains: they share most packages, and Go builds them once."""
    env = {**os.environ, "GOFLAGS": (os.environ.get("GOFLAGS", "") + " -buildvcs=false").strip()}
    command = [_go(), "build", "-trimpath", "-ldflags", _ldflags(version), "-o", str(target) + "/", "./cmd/..."]
    with log.open("w") as out:
        done = subprocess.run(command, cwd=source, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise HarnessError(f"go build failed (exit {done.returncode}); full log in {log}:\n{tail}")


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in BINARIES)


def ensure_built(source: str | Path | None = None) -> Binaries:
    """The cached binaries for this pin, building them first if missing; a file lock serialises builders."""
    module = find_source(source)
    key, version = build_key(module), pin(module)
    home = cache_root() / key
    home.mkdir(parents=True, exist_ok=True)
    bin_dir = home / "bin"
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(bin_dir):
            return Binaries(pin=version, key=key, bin_dir=bin_dir, built=False, seconds=0.0)
        started = time.monotonic()
        staging = home / f"bin.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        _compile(module, version, staging, home / "build.log")
        shutil.rmtree(bin_dir, ignore_errors=True)
        staging.rename(bin_dir)
        seconds = round(time.monotonic() - started, 1)
        (home / "build-seconds").write_text(f"{seconds}\n")
    return Binaries(pin=version, key=key, bin_dir=bin_dir, built=True, seconds=seconds)
