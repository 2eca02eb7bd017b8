"""Read Nodes, Pods and DRA objects straight from an API server, as the JSON `kubectl get -o json` prints.

The kubeconfig is read and merged by gpusched.scenarios.kubeconfig (a typed model, kubectl's merge of a
$KUBECONFIG list) and its exec plugin run by gpusched.scenarios.credentials; the official kubernetes client then
loads the one context (certificates, tokens) and makes the calls. Responses are kept raw, so `gpusched k8s
--kubeconfig` and `--nodes/--pods/--pod` files go through one parser. Every failure (a kubeconfig that does not
parse, a missing context, an unreachable or refusing server) is one InputError: exit 2.

Nothing here waits without end. Each socket read has a timeout, but a server that trickles a byte just inside it
would never trip one; so each request, and the loading of the kubeconfig, also runs under a whole deadline
(`deadline`), and an answer is read only up to the input size cap.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ClusterError, InputError, require
from ..files import max_input_bytes, within_depth
from ..limits import setting
from .credentials import exec_timeout, exec_user
from .kubeconfig import client_dict, paths_of
from .kubeconfig import load as load_kubeconfig

if TYPE_CHECKING:  # the client is imported when a kubeconfig is used, not at every CLI start
    from kubernetes import client

__all__ = [
    "DRA_COLLECTIONS",
    "Expired",
    "RestError",
    "call",
    "connect",
    "deadline",
    "default_kubeconfig",
    "fetch",
    "fetch_budgets_and_namespaces",
    "fetch_dra",
    "request",
    "split_name",
    "timeout",
]

DEFAULT_TIMEOUT = 30.0  # seconds to wait for each answer; GPUSCHED_API_TIMEOUT overrides it


def timeout() -> tuple[float, float]:
    """(connect, read) seconds for every request: GPUSCHED_API_TIMEOUT (a positive number), else 30; connecting
    waits at most 5 of them. A server that accepts and never answers is an error, not a hang."""
    seconds = setting("GPUSCHED_API_TIMEOUT", DEFAULT_TIMEOUT)
    return min(5.0, seconds), seconds


class Expired(BaseException):  # noqa: N818 - like KeyboardInterrupt: no `except Exception` in a library swallows it
    """A `deadline` passed; `what` says what was waited for."""

    def __init__(self, what: str, seconds: float) -> None:
        self.what, self.seconds = what, seconds
        super().__init__(f"{what} took longer than {seconds:g} s")


def _children() -> set[int]:
    """This process's child processes (Linux /proc; empty where that is not available)."""
    found: set[int] = set()
    try:
        with os.scandir("/proc/self/task") as tasks:
            for task in tasks:
                with open(os.path.join(task.path, "children")) as listing:
                    found.update(int(pid) for pid in listing.read().split())
    except OSError:
        pass
    return found


@contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise Expired from the block once `seconds` have passed, even from a blocking read. A child process the
    block started (an exec plugin) is killed instead, so the code waiting for it sees it end and tidies up; the
    block then ends in Expired, whatever it did next.

    It uses the real-time interval timer, so it works in the main thread (the CLI's); elsewhere the block runs
    with the socket timeouts alone. Deadlines nest: an outer one that comes first stays in charge, a later one is
    re-armed with what is left of it."""
    outer = signal.getitimer(signal.ITIMER_REAL)[0] if threading.current_thread() is threading.main_thread() else 0
    if threading.current_thread() is not threading.main_thread() or 0 < outer <= seconds:
        yield  # no timer here, or an outer deadline (its own handler) comes first
        return
    began = time.monotonic()
    before = _children()
    fired = False

    def expire(signum: int, frame: object) -> None:
        nonlocal fired
        fired = True
        started = _children() - before
        for pid in started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not started:
            raise Expired(what, seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except Expired:
        raise
    except BaseException:
        if fired:
            raise Expired(what, seconds) from None
        raise
    else:
        if fired:  # the client logs a failed exec plugin and goes on without credentials: still a timeout
            raise Expired(what, seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # an outer deadline, later than this one: it goes on counting
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001))


def default_kubeconfig() -> str:
    """The kubeconfig kubectl reads: $KUBECONFIG (a path list, merged as kubectl merges it), else ~/.kube/config."""
    listed = os.environ.get("KUBECONFIG", "")
    if any(Path(entry).is_file() for entry in paths_of(listed)):
        return listed
    return str(Path.home() / ".kube" / "config")


@contextmanager
def _client_log() -> Iterator[list[str]]:
    """What the kubernetes client logs (it reports a failed credential with `logging.error`, which would print
    `ERROR:root:` lines before gpusched's one message): kept for that message instead of printed."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    root = logging.getLogger()
    handler = Keep(logging.WARNING)
    root.addHandler(handler)  # with a handler on the root, logging.error() adds no stderr handler of its own
    try:
        yield said
    finally:
        root.removeHandler(handler)


def connect(kubeconfig: str | Path, context: str | None = None) -> client.ApiClient:
    """An API client for the kubeconfig's context (its current one unless named); a $KUBECONFIG list merged as
    kubectl merges it (gpusched.scenarios.kubeconfig), an exec plugin run by gpusched.scenarios.credentials."""
    require("kubernetes", "live")
    merged = load_kubeconfig(str(kubeconfig))
    resolved = merged.resolve(context)
    user_name = merged.contexts[resolved.context][1].user
    user = exec_user(resolved, user_name)
    from kubernetes.config import new_client_from_config_dict
    from kubernetes.config.config_exception import ConfigException

    where, wanted = merged.name, resolved.context
    with _client_log() as said:
        try:
            with deadline(exec_timeout(), "loading the kubeconfig"):
                return new_client_from_config_dict(client_dict(resolved, user), context=wanted, persist_config=False)
        except Expired as error:
            raise InputError(where, f"context {wanted!r}: {error} (set GPUSCHED_EXEC_TIMEOUT to wait longer)") from None
        except (ConfigException, ValueError, TypeError, OSError, AttributeError, KeyError) as error:
            why = (said[-1] if said else f"{error}").splitlines()[0] if (said or str(error)) else type(error).__name__
            raise InputError(where, f"context {wanted!r}: {why}") from None


def split_name(name: str, default_namespace: str = "default") -> tuple[str, str]:
    """`namespace/name` or `name` (in the default namespace)."""
    namespace, _, pod = name.rpartition("/")
    if not pod or name.count("/") > 1:
        raise InputError("POD", f"expected NAME or NAMESPACE/NAME, got {name!r}")
    return namespace or default_namespace, pod


class RestError(Exception):
    """The API server answered with an error status: `status`, the server's own message and its causes (the
    Status details, e.g. which PodDisruptionBudget refused an eviction)."""

    def __init__(self, status: int, message: str, causes: tuple[str, ...] = ()) -> None:
        self.status, self.message, self.causes = status, message, causes
        super().__init__(f"{status} {message}")


def request(
    api: client.ApiClient, method: str, path: str, body: Any = None, content_type: str = "application/json",
    kind: str | None = None,
) -> Any:  # fmt: skip
    """One call with the kubeconfig's credentials, within the whole deadline GPUSCHED_API_TIMEOUT; the JSON
    answer (of `kind` when given: a NodeList where one Node was asked for is refused), RestError for an error
    status.

    Unreachable servers raise urllib3's HTTPError, a server too slow raises Expired and an answer of the wrong
    shape ValueError (its words complete: "expected a JSON object, got ..."); callers name the server and the
    request.
    """
    headers = {"Accept": "application/json", "Content-Type": content_type}
    method, url, headers, body, _ = api.param_serialize(
        method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
    )
    limits = timeout()
    with deadline(limits[1], f"the answer to {method} {path.split('?')[0]}"):
        response = api.call_api(method, url, header_params=headers, body=body, _request_timeout=limits)
        try:
            data = _body(response.response)
        except BaseException:  # a half-read answer: its connection cannot be reused, close it
            response.response.close()
            raise
    if not 200 <= response.status < 300:
        raise RestError(response.status, _status_message(data, response.reason), _causes(data))
    found = _object(data)
    if kind is not None and found.get("kind") != kind:
        got = found.get("kind")
        raise ValueError(f"expected a {kind}, got {f'a {got}' if isinstance(got, str) and got else 'no kind'}")
    return found


def _body(raw: Any) -> bytes:
    """The answer's bytes, read in chunks up to the input size cap (ValueError beyond it), so an endless answer
    costs no more memory than an endless file."""
    cap = max_input_bytes()
    chunks: list[bytes] = []
    size = 0
    while chunk := raw.read1(1 << 20):
        size += len(chunk)
        if size > cap:
            raise ValueError(f"the answer is larger than the input limit of {cap} bytes (GPUSCHED_MAX_INPUT_BYTES)")
        chunks.append(chunk)
    return b"".join(chunks)


def _object(data: bytes) -> dict[str, Any]:
    """The answer as a JSON object within the reader's nesting limit; ValueError saying what came instead
    (nothing, null, a list, not JSON, nested too deep)."""
    if not data.strip():
        raise ValueError("expected a JSON object, got an empty answer")
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        raise ValueError("expected a JSON object, got an answer that is not JSON") from None
    if not isinstance(found, dict):
        raise ValueError(f"expected a JSON object, got JSON {type(found).__name__ if found is not None else 'null'}")
    if not within_depth(found):
        raise ValueError("expected a JSON object, got one nested too deep")
    return found


def _status_message(data: bytes, reason: str) -> str:
    """The API server's own words (its Status message), else the HTTP reason."""
    try:
        return json.loads(data)["message"]
    except (TypeError, ValueError, KeyError):
        return str(reason)


def _causes(data: bytes) -> tuple[str, ...]:
    """The messages of the Status' details.causes, when the answer is a Status that has them."""
    try:
        causes = json.loads(data)["details"]["causes"]
        return tuple(str(cause["message"]) for cause in causes if isinstance(cause, dict) and "message" in cause)
    except (TypeError, ValueError, KeyError):
        return ()


def call(
    api: client.ApiClient, method: str, path: str, body: Any = None, content_type: str = "application/json",
    missing_ok: bool = False, forbidden_ok: bool = False, kind: str | None = None,
) -> Any:  # fmt: skip
    """`request` for the commands that read: any failure becomes one ClusterError naming the server and the
    request; `missing_ok`: None for a 404, `forbidden_ok`: None for a 403 (something optional the user may not
    read); `kind`: the kind the answer must be."""
    from urllib3.exceptions import HTTPError  # the kubernetes client's transport (the live extra)

    server, what = api.configuration.host, f"{method} {path.split('?')[0]}"
    try:
        return request(api, method, path, body, content_type, kind)
    except RestError as error:
        if (missing_ok and error.status == 404) or (forbidden_ok and error.status == 403):
            return None
        raise ClusterError(server, what, str(error)) from None
    except HTTPError as error:
        raise ClusterError(server, what, f"cannot reach the API server: {root_cause(error)}") from None
    except Expired as error:
        raise ClusterError(server, what, f"{error}: timed out (set GPUSCHED_API_TIMEOUT to wait longer)") from None
    except ValueError as error:
        raise ClusterError(server, what, str(error)) from None


def _get(api: client.ApiClient, path: str, kind: str | None = None) -> Any:
    return call(api, "GET", path, kind=kind)


def root_cause(error: BaseException) -> str:
    """urllib3 wraps the socket error a few times; the innermost says what happened."""
    from urllib3.exceptions import HTTPError

    while isinstance(reason := getattr(error, "reason", None), BaseException):
        error = reason
    return str(error).split(": ", 1)[-1] if isinstance(error, HTTPError) else str(error)


DRA_COLLECTIONS = ("deviceclasses", "devicetaintrules", "resourceslices", "resourceclaims", "resourceclaimtemplates")


def _dra_documents(api: client.ApiClient) -> list[tuple[str, list[Any]]]:
    """Each DRA collection as kubectl lists it; DeviceTaintRules are v1 only from 1.37 on: before, there are none."""
    found = []
    for collection in DRA_COLLECTIONS:
        path = f"/apis/resource.k8s.io/v1/{collection}"
        listed = call(api, "GET", path, missing_ok=collection == "devicetaintrules")
        found.append((path, [_as_kubectl(listed if listed is not None else {"kind": "DeviceTaintRuleList"})]))
    return found


def fetch(
    kubeconfig: str | Path, context: str | None, pod: str
) -> tuple[Any, Any, Any, list[tuple[str, list[Any]]] | None]:
    """Nodes, every pod, the one pod to predict, and, when it has claims, every DRA object as (path, documents):
    as the server has them, parsed by the caller (the planner reads DRA objects; this layer only fetches)."""
    api = connect(kubeconfig, context)
    with api:
        namespace, name = split_name(pod)
        nodes = _get(api, "/api/v1/nodes", "NodeList")
        pods = _get(api, "/api/v1/pods", "PodList")
        target = _get(api, f"/api/v1/namespaces/{namespace}/pods/{name}", "Pod")
        documents = None
        if (target.get("spec") or {}).get("resourceClaims"):
            documents = _dra_documents(api)
    return nodes, pods, target, documents


def fetch_version(kubeconfig: str | Path, context: str | None) -> str:
    """The API server's release as `/version` reports it (gitVersion), for predictions that follow the server."""
    api = connect(kubeconfig, context)
    with api:
        found = _get(api, "/version").get("gitVersion")
    if not isinstance(found, str):
        raise InputError(api.configuration.host, f"GET /version: expected a gitVersion string, got {found!r}")
    return found


def fetch_budgets_and_namespaces(kubeconfig: str | Path, context: str | None) -> tuple[Any, Any]:
    """Every PodDisruptionBudget (preemption respects them) and every Namespace (namespaceSelectors read their
    labels; None if the user may not list them), as `kubectl get pdb -A` and `kubectl get namespaces` print them."""
    api = connect(kubeconfig, context)
    with api:
        budgets = _as_kubectl(_get(api, "/apis/policy/v1/poddisruptionbudgets"))
        namespaces = call(api, "GET", "/api/v1/namespaces", forbidden_ok=True)
    return budgets, None if namespaces is None else _as_kubectl(namespaces)


def fetch_dra(kubeconfig: str | Path, context: str | None) -> list[tuple[str, list[Any]]]:
    """Every DRA object, and the Pending pods that use claims, as `kubectl get -o json` prints them (for `dra`):
    claims already allocated keep their devices; bound pods are left out, their claims hold what they hold."""
    api = connect(kubeconfig, context)
    with api:
        documents = _dra_documents(api)
        pods = _as_kubectl(_get(api, "/api/v1/pods"))
    pods["items"] = [pod for pod in pods["items"] if _pending_with_claims(pod)]
    return [*documents, ("/api/v1/pods", [pods])]


def _pending_with_claims(pod: dict) -> bool:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    finished = status.get("phase") in ("Succeeded", "Failed")
    return bool(spec.get("resourceClaims")) and not spec.get("nodeName") and not finished


def _as_kubectl(listed: Any) -> Any:
    """A typed list (`DeviceClassList`, items without kind) as `kubectl get -o json` prints it: a List of objects."""
    kind, version = str(listed.get("kind", "")), listed.get("apiVersion")
    items = [{"apiVersion": version, "kind": kind.removesuffix("List"), **item} for item in listed.get("items") or []]
    return {"apiVersion": "v1", "kind": "List", "items": items}
