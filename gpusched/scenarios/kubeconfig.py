"""Kubeconfigs as kubectl reads them: each file a typed model, a `$KUBECONFIG` list merged as kubectl merges it.

A kubeconfig is input like any other: an entry of the wrong type (`contexts: 5`, a context named `5` or `null`)
is an InputError naming the file and the field, never a TypeError from the kubernetes client. The merge follows
client-go's loader: files in the order given, a missing one skipped; the first file that names a cluster, user or
context wins it whole (entries are never merged key by key); the first non-empty `current-context` wins. Relative
paths in an entry (certificates, token files, an exec plugin's command with a slash) are resolved against the
folder of the file the entry came from, as kubectl does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator

from ..errors import InputError, MissingExtra, require
from ..files import parse, read_text

__all__ = [
    "ExecConfig",
    "Kubeconfig",
    "KubeconfigFile",
    "Resolved",
    "load",
    "paths_of",
]

SOCKS_SCHEMES = ("socks5", "socks5h", "socks4", "socks4a")


class _Open(BaseModel):
    """An entry whose other keys (certificate data, auth providers, extensions) pass through to the client."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ContextSpec(_Open):
    cluster: StrictStr = ""
    user: StrictStr = ""
    namespace: StrictStr = ""


class ClusterSpec(_Open):
    server: StrictStr = ""
    proxy_url: StrictStr = Field("", alias="proxy-url")
    certificate_authority: StrictStr = Field("", alias="certificate-authority")


class ExecEnv(BaseModel):
    name: StrictStr
    value: StrictStr


class ExecConfig(_Open):
    """users[].user.exec: a credential plugin (client.authentication.k8s.io ExecCredential)."""

    command: StrictStr = Field(min_length=1)
    args: list[StrictStr] | None = None
    env: list[ExecEnv] | None = None
    api_version: StrictStr = Field("", alias="apiVersion")
    provide_cluster_info: StrictBool = Field(False, alias="provideClusterInfo")
    interactive_mode: StrictStr = Field("", alias="interactiveMode")
    install_hint: StrictStr = Field("", alias="installHint")


class UserSpec(_Open):
    exec: ExecConfig | None = None
    token: StrictStr | None = None
    client_certificate: StrictStr = Field("", alias="client-certificate")
    client_key: StrictStr = Field("", alias="client-key")
    token_file: StrictStr = Field("", alias="tokenFile")


class _Named(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: StrictStr = Field(min_length=1)


class NamedContext(_Named):
    context: ContextSpec = Field(default_factory=ContextSpec)


class NamedCluster(_Named):
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)


class NamedUser(_Named):
    user: UserSpec = Field(default_factory=UserSpec)


class KubeconfigFile(_Open):
    """One kubeconfig file (`kind: Config`) as kubectl decodes it: the lists may be absent or null, not another type."""

    kind: StrictStr = ""
    clusters: list[NamedCluster] | None = None
    contexts: list[NamedContext] | None = None
    users: list[NamedUser] | None = None
    current_context: StrictStr | None = Field(None, alias="current-context")

    @field_validator("kind")
    @classmethod
    def _config(cls, kind: str) -> str:
        if kind not in ("", "Config"):
            raise ValueError(f"expected kind Config, got {kind!r}")
        return kind


class Resolved(BaseModel):
    """The one context a command uses: its cluster and user entries, and the file each came from."""

    context: str
    namespace: str
    cluster: ClusterSpec
    user: UserSpec
    cluster_file: str
    user_file: str


class Kubeconfig(BaseModel):
    """The merged view of every file: each name's entry with the file it came from."""

    files: list[str]
    current_context: str = ""
    contexts: dict[str, tuple[str, ContextSpec]] = {}
    clusters: dict[str, tuple[str, ClusterSpec]] = {}
    users: dict[str, tuple[str, UserSpec]] = {}

    @property
    def name(self) -> str:
        return os.pathsep.join(self.files)

    def resolve(self, context: str | None) -> Resolved:
        """The named context (else the current one), its cluster and user; an InputError naming what is missing."""
        wanted = context or self.current_context
        if not wanted:
            raise InputError(self.name, "no current-context; name a context", "current-context")
        if wanted not in self.contexts:
            known = ", ".join(self.contexts) or "none"
            raise InputError(self.name, f"context {wanted!r} not found (contexts: {known})", "contexts")
        source, spec = self.contexts[wanted]
        if spec.cluster not in self.clusters:
            raise InputError(source, f"context {wanted!r} names cluster {spec.cluster!r}, which no file defines")
        cluster_file, cluster = self.clusters[spec.cluster]
        user_file, user = self.users.get(spec.user, (source, UserSpec()))
        if spec.user and spec.user not in self.users:
            raise InputError(source, f"context {wanted!r} names user {spec.user!r}, which no file defines")
        _check_proxy(cluster_file, spec.cluster, cluster)
        return Resolved(
            context=wanted, namespace=spec.namespace or "default", cluster=cluster, user=user,
            cluster_file=cluster_file, user_file=user_file,
        )  # fmt: skip


def _check_proxy(source: str, name: str, cluster: ClusterSpec) -> None:
    """A proxy the client can use: http(s), or SOCKS with PySocks installed (the `socks` extra)."""
    if not cluster.proxy_url:
        return
    scheme = cluster.proxy_url.partition("://")[0].lower()
    field = f"clusters({name}).cluster.proxy-url"
    if scheme in SOCKS_SCHEMES:
        try:
            require("socks", "socks")
        except MissingExtra:
            raise InputError(
                source, f"a {scheme} proxy needs PySocks, which is not installed: pip install 'gpusched[socks]'", field
            ) from None
    elif scheme not in ("http", "https"):
        raise InputError(source, f"proxy scheme {scheme!r} is not supported (http, https, or socks5)", field)


def paths_of(kubeconfig: str) -> list[str]:
    """The files a kubeconfig name stands for: one path, or a $KUBECONFIG list (os.pathsep between paths)."""
    return [path for path in kubeconfig.split(os.pathsep) if path]


def _read_file(path: str) -> KubeconfigFile:
    from . import validate  # the scenarios' validator: pydantic's errors as `field: message`, naming the file

    try:
        text = read_text(path)
    except InputError as error:
        raise InputError(path, f"cannot read the kubeconfig: {error.message}") from None
    if not text.strip():
        return KubeconfigFile()  # kubectl reads an empty file as an empty config
    try:
        data = parse(path, text)
    except InputError as error:
        raise InputError(path, f"not a kubeconfig: {error.message}") from None
    if data is None:
        return KubeconfigFile()
    if not isinstance(data, dict):
        raise InputError(path, f"not a kubeconfig: expected a mapping, got {type(data).__name__}")
    return validate(path, data, KubeconfigFile)


_PATH_KEYS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


def _absolute(folder: Path, entry: BaseModel, kind: str) -> Any:
    """The entry with its relative paths made absolute against `folder` (the file's), as kubectl resolves them."""
    data = entry.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False)
    for key in _PATH_KEYS[kind]:
        value = data.get(key)
        if value and not os.path.isabs(value):
            data[key] = str(folder / value)
    exec_ = data.get("exec")
    if isinstance(exec_, dict) and "/" in exec_["command"] and not os.path.isabs(exec_["command"]):
        exec_["command"] = str(folder / exec_["command"])
    return type(entry).model_validate(data)


def load(kubeconfig: str) -> Kubeconfig:
    """Read and merge the files `kubeconfig` names (kubectl's rules, above); an InputError when none exists."""
    files = [path for path in paths_of(kubeconfig) if Path(path).exists()]
    if not files:
        raise InputError(kubeconfig, "cannot read the kubeconfig: no such file")
    merged = Kubeconfig(files=files)
    for path in files:
        loaded = _read_file(path)
        folder = Path(path).resolve().parent
        if loaded.current_context and not merged.current_context:
            merged.current_context = loaded.current_context
        for context in loaded.contexts or []:
            merged.contexts.setdefault(context.name, (path, context.context))
        for cluster in loaded.clusters or []:
            merged.clusters.setdefault(cluster.name, (path, _absolute(folder, cluster.cluster, "cluster")))
        for user in loaded.users or []:
            merged.users.setdefault(user.name, (path, _absolute(folder, user.user, "user")))
    return merged


def client_dict(resolved: Resolved, user: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one-context kubeconfig the kubernetes client loads: the resolved entries (`user` in place of the
    resolved user's, e.g. with an exec plugin's credentials)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": resolved.context,
        "contexts": [{"name": resolved.context, "context": {"cluster": "cluster", "user": "user"}}],
        "clusters": [{"name": "cluster", "cluster": resolved.cluster.model_dump(by_alias=True, exclude_defaults=True)}],
        "users": [
            {
                "name": "user",
                "user": user if user is not None else resolved.user.model_dump(by_alias=True, exclude_defaults=True),
            }
        ],
    }
