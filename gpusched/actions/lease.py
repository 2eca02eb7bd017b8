"""Two runs that touch the same nodes never interleave: before its first write a run leases every node its journal
names, with an annotation on the node, written on the version read (so of two runs that read it at once only one
writes it), held while the run goes on and removed when it ends.

The annotation says which run holds the node, which process runs it and until when: a lease runs out LEASE_SECONDS
after it was last renewed (the run renews it as it goes, also while it waits), so a run that was killed blocks the
others only that long. A resume of the same journal on the same host takes the lease over at once when the process
that held it is gone. On the journal's own host two resumes are kept apart by a file lock too (journal.locked).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable

from ..errors import ClusterError
from .journal import Journal
from .kube import Kube

__all__ = ["LEASE_ANNOTATION", "LEASE_SECONDS", "Busy", "Leases", "holder"]

LEASE_ANNOTATION = "gpusched.io/lease"
LEASE_SECONDS = 60.0


class Busy(ClusterError):
    """A node the run needs is leased by another run (or by another process of this one)."""


def _started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux /proc), which tells a process from a later one
    given the same pid; None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def holder(pid: int | None = None) -> str:
    """This process, as a lease names it: host, pid and start time."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}/{pid}/{_started(pid) or '?'}"


def _gone(other: str) -> bool:
    """Whether the process a lease names has ended: only a process of this host can be known to have."""
    host, _, rest = other.partition("/")
    pid, _, start = rest.partition("/")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _started(int(pid)) != start


class Leases:
    def __init__(self, kube: Kube, journal: Journal, clock: Callable[[], float] = time.time) -> None:
        self.kube, self.journal, self.clock = kube, journal, clock
        self.me = holder()
        self.held: list[str] = []
        self.until = 0.0

    def _value(self, until: float) -> str:
        return json.dumps({"run": self.journal.run, "holder": self.me, "until": round(until, 3)})

    def _claim(self, name: str, until: float) -> Callable[[dict], dict | None]:
        def claim(node: dict) -> dict | None:
            found = _read((node["metadata"].get("annotations") or {}).get(LEASE_ANNOTATION))
            if found and found.get("until", 0) > self.clock():
                ours = found.get("run") == self.journal.run
                if not ours or (found.get("holder") != self.me and not _gone(str(found.get("holder")))):
                    who = "another process running this journal" if ours else f"gpusched run {found.get('run')}"
                    stamp = time.strftime("%H:%M:%S", time.localtime(float(found["until"])))
                    raise Busy(self.kube.server, f"PATCH /api/v1/nodes/{name}",
                               f"node {name} is leased by {who} ({found.get('holder')}) until {stamp} "
                               f"(annotation {LEASE_ANNOTATION}): wait for it to end, or, if it was killed, until "
                               "then", touched=self.journal.touched)  # fmt: skip
            return {"metadata": {"annotations": {LEASE_ANNOTATION: self._value(until)}}}

        return claim

    def dry_run(self) -> None:
        """The lease's write, checked by the server (RBAC: the user may patch nodes): nothing is stored."""
        for name in self.journal.nodes():
            self.kube.update_node(name, self._claim(name, self.clock() + LEASE_SECONDS), dry_run=True)

    def take(self) -> None:
        """Lease every node of the journal (those that exist), or none: Busy names the node another run holds."""
        until = self.clock() + LEASE_SECONDS
        try:
            for name in self.journal.nodes():
                if self.kube.update_node(name, self._claim(name, until)) is not None and name not in self.held:
                    self.held.append(name)
        except BaseException:
            self.release()
            raise
        self.until = until

    def renew(self) -> None:
        """Extend the leases once half their time is gone."""
        if self.held and self.clock() > self.until - LEASE_SECONDS / 2:
            self.take()

    def release(self) -> list[str]:
        """Remove this run's leases; what could not be removed (they run out on their own), in words."""
        failed = []
        for name in list(self.held):

            def drop(node: dict) -> dict | None:
                found = _read((node["metadata"].get("annotations") or {}).get(LEASE_ANNOTATION))
                if not found or found.get("run") != self.journal.run or found.get("holder") != self.me:
                    return None
                return {"metadata": {"annotations": {LEASE_ANNOTATION: None}}}

            try:
                self.kube.update_node(name, drop)
                self.held.remove(name)
            except ClusterError as error:
                failed.append(f"the lease on {name} ({error}; it runs out in {LEASE_SECONDS:g} s)")
        return failed


def _read(value: str | None) -> dict | None:
    try:
        found = json.loads(value) if value else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
