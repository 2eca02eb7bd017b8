"""Fetch the openb trace's CSVs as their owners publish them, verified: each file's size and SHA-256 must be the
published file's, or nothing is written.

A download is bounded like every other input: no more bytes than the published size are read (a server that sends
more, or whose Content-Length says more, is refused), a connection that stays silent for `GPUSCHED_READ_TIMEOUT` seconds or
a file that takes longer than `GPUSCHED_DOWNLOAD_TIMEOUT` seconds in all (a trickling server) is stopped, and a
malformed answer (a bad status line, too many headers, a body cut short) is one InputError naming the URL. The
files are staged and renamed together (gpusched.files): all of them land, or none. Proxies come from the
environment (`https_proxy`, `no_proxy`), as for urllib.
"""

from __future__ import annotations

import functools
import hashlib
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import urllib3

from ..errors import InputError, LimitError
from ..files import make_folder, read_timeout, write_files
from ..limits import setting
from .openb import NODE_FILE

__all__ = ["OPENB_MANIFEST", "OPENB_URL", "Published", "download_openb"]

# The trace as its owners publish it (alibaba/clusterdata, Alibaba Cluster Trace Program; research and study use).
OPENB_URL = "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-gpu-v2023/csv"
CONNECT_SECONDS = 15.0
DEFAULT_DOWNLOAD_SECONDS = 600.0  # one file, start to end
CHUNK = 1 << 16

Progress = Callable[[int, int], None]  # (bytes so far, bytes in all)


@dataclass(frozen=True)
class Published:
    """One published file: its name, size in bytes and SHA-256."""

    name: str
    size: int
    sha256: str


OPENB_MANIFEST: tuple[Published, ...] = (
    Published(NODE_FILE, 42353, "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5"),
    Published("openb_pod_list_default.csv", 575468, "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"),
    Published("openb_pod_list_cpu050.csv", 525811, "747f43247bffc2b0bb081d7f61f0705ca8d390dafc0b647e642c92f3baf3ba1e"),
    Published(
        "openb_pod_list_gpushare40.csv", 572662, "d83ce79a4eb6987524bedbb0c65e41aed3a36bf6c1b78b86234c3687a07e1d40"
    ),
    Published(
        "openb_pod_list_multigpu20.csv", 271530, "d9ec6f6c74fb980cc0b81239470c6353fceea077ea9abd610003b604c7cc2b01"
    ),
    Published(
        "openb_pod_list_gpuspec33.csv", 587467, "eca4f746db1e5b25864ad021b55ece3943e101a3ebd4574d09dcb95c46117652"
    ),
)


def download_seconds() -> float:
    """The most one file may take: GPUSCHED_DOWNLOAD_TIMEOUT seconds (a positive number), else 600."""
    return setting("GPUSCHED_DOWNLOAD_TIMEOUT", DEFAULT_DOWNLOAD_SECONDS)


def download_openb(
    folder: str | Path,
    base_url: str = OPENB_URL,
    manifest: tuple[Published, ...] | None = None,
    progress: Progress | None = None,
) -> list[Path]:
    """Fetch every file of `manifest` (default OPENB_MANIFEST) from `base_url` into `folder` (created), each checked
    against its size and SHA-256; the files are written together once all are verified, or not at all."""
    manifest = manifest or OPENB_MANIFEST
    scheme = urlsplit(base_url).scheme
    if scheme not in ("http", "https"):
        raise InputError(base_url, "expected an http:// or https:// URL")
    target = Path(folder)
    report = progress or (lambda done, total: None)
    total = sum(item.size for item in manifest)
    done = 0
    fetched: list[tuple[str, bytes]] = []
    with _pool(base_url) as pool:  # its connections closed however the downloads end
        for item in manifest:
            url = f"{base_url.rstrip('/')}/{item.name}"
            body = _fetch(pool, url, item, functools.partial(_offset, report, done, total))
            done += len(body)
            fetched.append((str(target / item.name), body))
    make_folder(target)
    write_files(fetched)
    return [target / item.name for item in manifest]


def _offset(report: Progress, before: int, total: int, size: int) -> None:
    report(before + size, total)


def _pool(url: str) -> urllib3.PoolManager:
    """A connection pool with the timeouts above, through the environment's proxy for this URL when it has one."""
    timeout = urllib3.Timeout(connect=CONNECT_SECONDS, read=read_timeout())
    retries = urllib3.Retry(total=None, connect=1, read=0, redirect=3, status=0, other=0, raise_on_status=False)
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        try:
            return urllib3.ProxyManager(proxy, timeout=timeout, retries=retries)
        except (urllib3.exceptions.HTTPError, ValueError) as error:
            raise InputError(proxy, f"cannot use this proxy (from the environment): {error}") from None
    return urllib3.PoolManager(timeout=timeout, retries=retries)


def _fetch(pool: urllib3.PoolManager, url: str, item: Published, progress: Callable[[int], None]) -> bytes:
    """The verified body of one file: at most its published size read, within download_seconds()."""
    give_up = time.monotonic() + download_seconds()
    digest = hashlib.sha256()
    chunks: list[bytes] = []
    size = 0
    try:
        response = pool.request("GET", url, preload_content=False)
        try:
            if response.status != 200:
                raise InputError(url, f"cannot download: HTTP {response.status} {response.reason or ''}".rstrip())
            announced = response.headers.get("Content-Length")
            if announced is not None and announced.isdigit() and int(announced) != item.size:
                raise InputError(url, f"the server announces {announced} bytes; the published file has {item.size}")
            while chunk := response.read1(CHUNK):
                size += len(chunk)
                if size > item.size:
                    raise LimitError(url, f"more than the published file's {item.size} bytes")
                if time.monotonic() > give_up:
                    raise LimitError(
                        url, f"not done within {download_seconds():g} s (GPUSCHED_DOWNLOAD_TIMEOUT): {size} bytes"
                    )
                digest.update(chunk)
                chunks.append(chunk)
                progress(size)
        except BaseException:
            response.close()  # a connection in an unknown state is never reused
            raise
        response.release_conn()
    except urllib3.exceptions.HTTPError as error:
        raise InputError(url, f"cannot download: {_reason(error)}") from None
    except OSError as error:
        raise InputError(url, f"cannot download: {error.strerror or error}") from None
    if size != item.size:
        raise InputError(url, f"{size} bytes, cut short: the published file has {item.size}")
    if digest.hexdigest() != item.sha256:
        raise InputError(url, f"SHA-256 {digest.hexdigest()} is not the published file's {item.sha256}")
    return b"".join(chunks)


def _reason(error: Exception) -> str:
    """What went wrong, without urllib3's wrapping (`Max retries exceeded ... Caused by ...`)."""
    cause = getattr(error, "reason", None) or error
    if isinstance(cause, urllib3.exceptions.ProtocolError) and len(cause.args) > 1:
        cause = cause.args[1]
    return str(cause).strip() or type(cause).__name__
