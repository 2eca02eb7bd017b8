"""Build the control plane once per release into a cache outside git: ~/.cache/gpusched/conformance/<key>/bin.

One Go module, several releases: `conformance/go.mod` pins the newest, and each `conformance/releases/vX.Y.mod`
(with its `.sum`) pins an older one; the same mains (`cmd/*/main.go`) are built against each with
`go build -modfile`. The key is a release's Kubernetes version plus a digest of its module files and the mains, so
editing a pin (or a main.go) builds that release again and nothing else does. Go's own module and build caches are
the user's (`go env`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from .. import folders

__all__ = [
    "BINARIES",
    "Binaries",
    "HarnessError",
    "Release",
    "find_source",
    "releases",
    "release",
    "cache_root",
    "ensure_built",
]

BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
MODULE = "module gpusched/conformance"
_PIN = re.compile(r"^\s*k8s\.io/kubernetes (v\d+\.\d+\.\d+)\s*$", re.M)
OLDER = "releases"  # conformance/releases/vX.Y.mod and .sum: the older releases


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


@dataclass(frozen=True)
class Release:
    """One buildable release: the module folder and the go.mod (or releases/vX.Y.mod) that pins it."""

    source: Path
    modfile: Path

    @property
    def pin(self) -> str:
        """The k8s.io/kubernetes version required, e.g. v1.37.2."""
        found = _PIN.search(self.modfile.read_text())
        if not found:
            raise HarnessError(f"{self.modfile}: no `k8s.io/kubernetes vX.Y.Z` requirement")
        return found.group(1)

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.pin.lstrip("v").split(".")[:2]
        return int(major), int(minor)

    @property
    def key(self) -> str:
        """The pin plus a digest of the mod and sum files and the mains: the cache folder's name."""
        files = sorted([self.modfile, self.modfile.with_suffix(".sum"), *self.source.glob("cmd/*/*.go")])
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.relative_to(self.source).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        return f"{self.pin}-{digest.hexdigest()[:12]}"

    def go_flags(self) -> list[str]:
        """go.mod is Go's default; an older release's file is named with -modfile (its .sum beside it)."""
        default = self.modfile == self.source / "go.mod"
        return [] if default else [f"-modfile={self.modfile.relative_to(self.source).as_posix()}"]


def releases(source: str | Path | None = None) -> list[Release]:
    """Every release the module can build, oldest first; go.mod's is the newest."""
    module = find_source(source)
    found = [Release(module, path) for path in sorted((module / OLDER).glob("v*.mod"))]
    newest = Release(module, module / "go.mod")
    listed = sorted([*found, newest], key=lambda r: r.minor)
    if listed[-1] != newest or len({r.minor for r in listed}) != len(listed):
        raise HarnessError(f"{module}: go.mod must pin the newest release and each {OLDER}/*.mod another minor")
    return listed


def release(version: str | None = None, source: str | Path | None = None) -> Release:
    """The release `--k8s-version` names: `1.35` (its one patch here), `1.35.4` or `v1.35.4`; None is the newest."""
    known = releases(source)
    if version is None:
        return known[-1]
    wanted = version.strip().lstrip("v")
    for candidate in known:
        if wanted in (candidate.pin.lstrip("v"), "{}.{}".format(*candidate.minor)):
            return candidate
    names = ", ".join(r.pin for r in known)
    raise HarnessError(
        f"--k8s-version {version}: no control plane for that release (the conformance module builds {names}; "
        f"an older one needs conformance/{OLDER}/vX.Y.mod and .sum)"
    )


def cache_root() -> Path:
    """$GPUSCHED_CACHE_DIR, else the user cache (gpusched.folders: $XDG_CACHE_HOME/gpusched or ~/.cache/gpusched);
    then conformance/."""
    base = os.environ.get("GPUSCHED_CACHE_DIR")
    return (Path(base) if base else folders.cache_dir()) / "conformance"


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


def _compile(chosen: Release, target: Path, log: Path) -> None:
    """One `go build` for all four mains: they share most packages, and Go builds them once."""
    env = {**os.environ, "GOFLAGS": (os.environ.get("GOFLAGS", "") + " -buildvcs=false").strip()}
    flags = ["-trimpath", *chosen.go_flags(), "-ldflags", _ldflags(chosen.pin)]
    command = [_go(), "build", *flags, "-o", str(target) + "/", "./cmd/..."]
    with log.open("w") as out:
        done = subprocess.run(command, cwd=chosen.source, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise HarnessError(f"go build failed (exit {done.returncode}); full log in {log}:\n{tail}")


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in BINARIES)


def ensure_built(source: str | Path | None = None, version: str | None = None) -> Binaries:
    """The cached binaries of a release (None: the newest), building them first if missing; a file lock serialises
    builders."""
    chosen = release(version, source)
    key, pinned = chosen.key, chosen.pin
    home = cache_root() / key
    home.mkdir(parents=True, exist_ok=True)
    bin_dir = home / "bin"
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(bin_dir):
            return Binaries(pin=pinned, key=key, bin_dir=bin_dir, built=False, seconds=0.0)
        started = time.monotonic()
        staging = home / f"bin.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        _compile(chosen, staging, home / "build.log")
        shutil.rmtree(bin_dir, ignore_errors=True)
        staging.rename(bin_dir)
        seconds = round(time.monotonic() - started, 1)
        (home / "build-seconds").write_text(f"{seconds}\n")
    return Binaries(pin=pinned, key=key, bin_dir=bin_dir, built=True, seconds=seconds)
