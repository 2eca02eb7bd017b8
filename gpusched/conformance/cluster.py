"""Run the real control plane as plain processes: etcd, kube-apiserver, kube-scheduler (+ kube-controller-manager).

No kubelet and no container runtime: Nodes are API objects, so everything the scheduler decides is real. Each
run gets a temp dir with its own CA, serving certificate, service-account key, static tokens and kubeconfig, and
free loopback ports. `RunningCluster` always stops what it started (context manager; attached children also die with
their parent through PR_SET_PDEATHSIG), and `stop_detached` ends a `gpusched cluster up` by the recorded pids.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from .build import BINARIES, Binaries, HarnessError

__all__ = [
    "CONTROLLERS",
    "WORKLOAD_CONTROLLERS",
    "Process",
    "ControlPlane",
    "RunningCluster",
    "start",
    "stop_detached",
    "STATE_FILE",
]

STATE_FILE = "cluster.json"
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 10.0
ADMIN_CONTEXT, VIEWER_CONTEXT = "gpusched", "viewer"
# Only what scheduling and `--apply` need without kubelets: no node lifecycle (it would taint every Node not-ready).
# disruption-controller keeps PodDisruptionBudget status, which the Eviction API enforces; replicaset-controller
# re-creates an evicted pod of a ReplicaSet, as a defrag move expects.
# The controllers the differential needs: it writes PodDisruptionBudget status itself (with no kubelet no pod is
# Ready, so a disruption controller would allow no disruption) and creates pods without owners.
CONTROLLERS = "resourceclaim-controller,garbage-collector-controller,namespace-controller"
# What carrying out a plan needs besides: budgets computed by the API's own controller (the Eviction API enforces
# them) and ReplicaSets that recreate an evicted pod (`cluster up`, the apply tests).
WORKLOAD_CONTROLLERS = f"{CONTROLLERS},disruption-controller,replicaset-controller"
_OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = gpusched
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1,DNS:localhost
"""


class Process(BaseModel):
    name: str
    pid: int
    port: int = Field(description="the loopback port it serves (etcd: clients; the others: HTTPS)")
    binary: Path
    log: Path


class ControlPlane(BaseModel):
    version: str = Field(description="the Kubernetes release running, e.g. v1.37.2")
    workdir: Path = Field(description="certificates, tokens, logs and etcd's data; removed on stop")
    kubeconfig: Path = Field(description=f"contexts {ADMIN_CONTEXT} (system:masters) and {VIEWER_CONTEXT} (no rights)")
    server: str
    processes: list[Process]
    startup_seconds: float = Field(description="from the first process started to every component ready")


# --- files ------------------------------------------------------------------------------------------------------


def _openssl(workdir: Path, *args: str) -> None:
    done = subprocess.run(["openssl", *args], cwd=workdir, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HarnessError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def _certificates(workdir: Path) -> None:
    """A CA, the API server's serving certificate for 127.0.0.1, and the service-account signing key."""
    if shutil.which("openssl") is None:
        raise HarnessError("openssl not found: the harness makes the cluster's certificates with it")
    (workdir / "openssl.cnf").write_text(_OPENSSL_CONFIG)
    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-config", "openssl.cnf")
    _openssl(workdir, "req", "-x509", *key, "-extensions", "ca", "-subj", "/CN=gpusched-ca", "-days", "7",
             "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
    _openssl(workdir, "req", "-new", *key, "-subj", "/CN=kube-apiserver", "-keyout", "apiserver.key",
             "-out", "apiserver.csr")  # fmt: skip
    _openssl(workdir, "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "7", "-extfile", "openssl.cnf", "-extensions", "leaf",
             "-out", "apiserver.crt")  # fmt: skip
    _openssl(workdir, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "sa.key")
    _openssl(workdir, "pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def _kubeconfig(server: str, ca: Path, tokens: dict[str, str]) -> dict:
    """One cluster, one user and one context per token; the admin context is current."""
    users = [{"name": name, "user": {"token": token}} for name, token in tokens.items()]
    contexts = [{"name": name, "context": {"cluster": "gpusched", "user": name}} for name in tokens]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gpusched", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": users,
        "contexts": contexts,
        "current-context": ADMIN_CONTEXT,
    }


def _free_ports(count: int) -> list[int]:
    """Distinct free loopback ports: all held open together, then released for the components to bind."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


# --- processes --------------------------------------------------------------------------------------------------


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it when the test process dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class _Spawned:
    """A detached child (`cluster up`): no Popen, whose finaliser warns about a process meant to outlive it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        while (code := self.poll()) is None:
            time.sleep(0.05)
        return code


Child = subprocess.Popen | _Spawned


def _launch(name: str, binary: Path, args: list[str], workdir: Path, attach: bool) -> Child:
    """Its own session and a log file; attached children also get PR_SET_PDEATHSIG."""
    log = workdir / f"{name}.log"
    if not attach:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ]
        return _Spawned(os.posix_spawn(binary, [str(binary), *args], os.environ, file_actions=actions, setsid=True))
    with log.open("w") as out:
        return subprocess.Popen(
            [str(binary), *args], cwd=workdir, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent,
        )  # fmt: skip


def _get(url: str, context: ssl.SSLContext | None = None, token: str = "") -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=5, context=context) as response:
        return response.read()


def _insecure() -> ssl.SSLContext:
    """The scheduler's and controller manager's own self-signed health endpoints."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _wait_ready(name: str, proc: Child, probe: Callable[[], bool], log: Path, deadline: float) -> None:
    """Poll the health endpoint; a process that exits or a deadline that passes ends the wait with its log."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HarnessError(f"{name} exited with {proc.returncode} while starting:\n{_tail(log)}")
        try:
            if probe():
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        time.sleep(0.2)
    raise HarnessError(f"{name} not ready after {READY_TIMEOUT:.0f} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 12) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


def _stop_pid(pid: int, proc: Child | None) -> None:
    """SIGTERM, then SIGKILL after STOP_TIMEOUT; a child of ours is reaped."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        if (proc.poll() is not None) if proc else not _alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if proc:
        proc.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not status.exists() or status.read_text().split(") ")[-1][:1] != "Z"


# --- the cluster ------------------------------------------------------------------------------------------------


class RunningCluster:
    """A running control plane; `stop()` (or leaving the `with` block) ends every process and removes its files."""

    def __init__(self, info: ControlPlane, procs: dict[str, Child]) -> None:
        self.info = info
        self.procs = procs

    @property
    def kubeconfig(self) -> Path:
        return self.info.kubeconfig

    def __enter__(self) -> RunningCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Latest-started first, so the API server outlives its clients and etcd outlives the API server."""
        for name in reversed(list(self.procs)):
            proc = self.procs.pop(name)
            _stop_pid(proc.pid, proc)
        shutil.rmtree(self.info.workdir, ignore_errors=True)


def _flags(**values: object) -> list[str]:
    """`data_dir=x` becomes `--data-dir=x`."""
    return [f"--{key.replace('_', '-')}={value}" for key, value in values.items()]


def _args(
    workdir: Path, ports: dict[str, int], kubeconfig: Path, controllers: str, scheduler: tuple[str, ...] = ()
) -> dict[str, list[str]]:
    """Each component's flags: loopback only, our certificates and tokens, nothing a kubelet would need."""
    etcd, peer = f"http://127.0.0.1:{ports['etcd']}", f"http://127.0.0.1:{ports['peer']}"
    client = _flags(
        kubeconfig=kubeconfig, authentication_kubeconfig=kubeconfig, authorization_kubeconfig=kubeconfig,
        leader_elect="false", bind_address="127.0.0.1", profiling="false",
    )  # fmt: skip
    return {
        "etcd": _flags(
            name="gpusched",
            data_dir=workdir / "etcd",
            listen_client_urls=etcd,
            advertise_client_urls=etcd,
            listen_peer_urls=peer,
            initial_advertise_peer_urls=peer,
            initial_cluster=f"gpusched={peer}",
            unsafe_no_fsync="true",
            log_level="warn",
        ),  # fmt: skip
        "kube-apiserver": _flags(
            etcd_servers=etcd,
            secure_port=ports["kube-apiserver"],
            bind_address="127.0.0.1",
            advertise_address="127.0.0.1",
            cert_dir=workdir / "apiserver",
            tls_cert_file=workdir / "apiserver.crt",
            tls_private_key_file=workdir / "apiserver.key",
            client_ca_file=workdir / "ca.crt",
            token_auth_file=workdir / "tokens.csv",
            authorization_mode="RBAC",
            service_account_issuer="https://kubernetes.default.svc",
            service_account_key_file=workdir / "sa.pub",
            service_account_signing_key_file=workdir / "sa.key",
            service_cluster_ip_range="10.96.0.0/24",
            endpoint_reconciler_type="none",
            disable_admission_plugins="ServiceAccount,TaintNodesByCondition",
            profiling="false",
        ),  # fmt: skip
        "kube-scheduler": client
        + _flags(secure_port=ports["kube-scheduler"], cert_dir=workdir / "scheduler")
        + list(scheduler),
        "kube-controller-manager": client
        + _flags(
            secure_port=ports["kube-controller-manager"],
            cert_dir=workdir / "controller-manager",
            controllers=controllers,
            use_service_account_credentials="false",
        ),  # fmt: skip
    }


def _probes(cluster_ca: ssl.SSLContext, ports: dict[str, int], token: str) -> dict[str, Callable[[], bool]]:
    """Each component's readiness: etcd /health, the API server's /readyz, the others' own endpoints."""
    insecure = _insecure()

    def https(name: str, path: str, context: ssl.SSLContext, bearer: str = "") -> Callable[[], bool]:
        return lambda: _get(f"https://127.0.0.1:{ports[name]}{path}", context, bearer) == b"ok"

    return {
        "etcd": lambda: json.loads(_get(f"http://127.0.0.1:{ports['etcd']}/health")).get("health") == "true",
        "kube-apiserver": https("kube-apiserver", "/readyz", cluster_ca, token),
        "kube-scheduler": https("kube-scheduler", "/readyz", insecure),
        "kube-controller-manager": https("kube-controller-manager", "/healthz", insecure),
    }


def _prepare(workdir: Path, ports: dict[str, int]) -> tuple[Path, dict[str, str]]:
    """Certificates, the token file (admin in system:masters, a viewer with no rights) and the kubeconfig."""
    _certificates(workdir)
    tokens = {ADMIN_CONTEXT: secrets.token_hex(16), VIEWER_CONTEXT: secrets.token_hex(16)}
    (workdir / "tokens.csv").write_text(
        f'{tokens[ADMIN_CONTEXT]},admin,admin,"system:masters"\n{tokens[VIEWER_CONTEXT]},viewer,viewer\n'
    )
    server = f"https://127.0.0.1:{ports['kube-apiserver']}"
    kubeconfig = workdir / "kubeconfig"
    kubeconfig.write_text(json.dumps(_kubeconfig(server, workdir / "ca.crt", tokens), indent=2))
    return kubeconfig, tokens


def start(
    binaries: Binaries,
    workdir: Path | None = None,
    controller_manager: bool = False,
    attach: bool = True,
    controllers: str = CONTROLLERS,
    scheduler_args: tuple[str, ...] = (),
) -> RunningCluster:
    """Start etcd, then the API server, then the scheduler (and controller manager running `controllers`); each
    must be ready in turn.

    `attach=False` leaves the processes running after this Python process exits (`gpusched cluster up`);
    `scheduler_args` are more kube-scheduler flags (`--v=10` logs every plugin's score per node).
    On any failure everything already started is stopped before the error is raised.
    """
    workdir = Path(workdir or tempfile.mkdtemp(prefix="gpusched-cluster-"))
    workdir.mkdir(parents=True, exist_ok=True)
    names = ["etcd", "kube-apiserver", "kube-scheduler", *(["kube-controller-manager"] if controller_manager else [])]
    ports = dict(zip(["peer", *BINARIES], _free_ports(len(BINARIES) + 1), strict=True))
    kubeconfig, tokens = _prepare(workdir, ports)
    args = _args(workdir, ports, kubeconfig, controllers, scheduler_args)
    cluster_ca = ssl.create_default_context(cafile=str(workdir / "ca.crt"))
    probes = _probes(cluster_ca, ports, tokens[ADMIN_CONTEXT])
    info = ControlPlane(
        version=binaries.pin, workdir=workdir, kubeconfig=kubeconfig,
        server=f"https://127.0.0.1:{ports['kube-apiserver']}", processes=[], startup_seconds=0.0,
    )  # fmt: skip
    cluster = RunningCluster(info, {})
    started = time.monotonic()
    try:
        for name in names:
            proc = _launch(name, binaries.path(name), args[name], workdir, attach)
            cluster.procs[name] = proc
            log = workdir / f"{name}.log"
            info.processes.append(
                Process(name=name, pid=proc.pid, port=ports[name], binary=binaries.path(name), log=log)
            )
            _wait_ready(name, proc, probes[name], log, time.monotonic() + READY_TIMEOUT)
    except BaseException:
        _keep_logs(workdir)
        cluster.stop()
        raise
    info.startup_seconds = round(time.monotonic() - started, 2)
    (workdir / STATE_FILE).write_text(info.model_dump_json(indent=2))
    return cluster


def _keep_logs(workdir: Path) -> None:
    """A failed start keeps its logs beside the temp dir (removed with it otherwise) for the error to point at."""
    kept = Path(tempfile.gettempdir()) / "gpusched-cluster-failed"
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir()
    for log in workdir.glob("*.log"):
        shutil.copy(log, kept / log.name)


def stop_detached(workdir: Path) -> ControlPlane:
    """End a `cluster up` from its state file: only pids still running the recorded binaries are signalled."""
    state = workdir / STATE_FILE
    if not state.is_file():
        raise HarnessError(f"{state}: no cluster state here (was `gpusched cluster up` run with this --dir?)")
    info = ControlPlane.model_validate_json(state.read_text())
    for process in reversed(info.processes):
        if _runs(process.pid, process.binary):
            _stop_pid(process.pid, None)
            _reap(process.pid)
    shutil.rmtree(workdir, ignore_errors=True)
    return info


def _runs(pid: int, binary: Path) -> bool:
    try:
        return Path(f"/proc/{pid}/exe").resolve() == binary.resolve()
    except OSError:
        return False


def _reap(pid: int) -> None:
    """When `up` and `down` ran in one process the stopped pid is our zombie child: collect it."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
