"""Reading DRA objects: `kubectl get -o json|yaml` output (a List, a *List, one object, or multi-document YAML),
gpusched's own `{claims: [...]}` file, or a built-in object set by name (`gpusched/scenarios/dra/*.yaml`).

Every complaint names the file and the field, with the object it is in: `items[2](ResourceClaim ml/x).spec...`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from pydantic import BaseModel, ValidationError

from ...errors import InputError
from ...files import parse, read_document
from ...models.dra import (
    API_VERSION,
    DRA_KINDS,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from ...models.kube import KubePod, parse_pod
from ..scheduler.framework import NEWEST, Version
from .cel import CelError, compile_selector

__all__ = [
    "DraObjects",
    "builtin_object_sets",
    "load_objects",
    "objects_from",
    "read_all",
    "selector_paths",
    "tainted",
]

_BUILTIN = resources.files("gpusched.scenarios") / "dra"
_MODELS: dict[str, type[BaseModel]] = {
    "DeviceClass": DeviceClass,
    "DeviceTaintRule": DeviceTaintRule,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "ResourceSlice": ResourceSlice,
}


@dataclass
class DraObjects:
    """The objects of all files, each with where it came from (file, field path) for error messages."""

    classes: dict[str, DeviceClass] = field(default_factory=dict)
    claims: list[ResourceClaim] = field(default_factory=list)
    templates: dict[str, ResourceClaimTemplate] = field(default_factory=dict)
    slices: list[ResourceSlice] = field(default_factory=list)  # with the taints of the DeviceTaintRules added
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    pods: list[KubePod] = field(default_factory=list)
    origin: dict[str, tuple[str, str]] = field(default_factory=dict)  # "Kind ns/name" -> (file, path)

    def where(self, kind: str, name: str) -> tuple[str, str]:
        return self.origin.get(f"{kind} {name}", ("objects", ""))


def builtin_object_sets() -> list[str]:
    return sorted(entry.name.removesuffix(".yaml") for entry in _BUILTIN.iterdir() if entry.name.endswith(".yaml"))


def read_all(source: str) -> list[Any]:
    """The documents of a file: one for JSON, every `---` document for YAML; a built-in set by name."""
    if source in builtin_object_sets():
        text = (_BUILTIN / f"{source}.yaml").read_text(encoding="utf-8")
        return [doc for doc in parse(f"object set {source}", text, documents=True) if doc]
    missing = "no such file (nor a built-in object set: " + ", ".join(builtin_object_sets()) + ")"
    return [doc for doc in read_document(source, missing, documents=True) if doc is not None]


def _items(doc: Any, source: str, path: str) -> list[tuple[str, Any]]:
    """(path, object) for every object in a document, Lists flattened."""
    if not isinstance(doc, dict):
        raise InputError(source, f"expected a Kubernetes object or a List, got {type(doc).__name__}", path)
    if "claims" in doc and "kind" not in doc:
        return [
            (f"{path}claims[{i}]", {"kind": "ResourceClaim", "apiVersion": API_VERSION, **item})
            if isinstance(item, dict)
            else (f"{path}claims[{i}]", item)
            for i, item in enumerate(doc["claims"] or [])
        ]
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List"):
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError(source, "expected a list", f"{path}items")
        found = []
        for index, item in enumerate(items):
            found.extend(_items(item, source, f"{path}items[{index}]."))
        return found
    return [(path.rstrip("."), doc)]


def _label(doc: dict[str, Any]) -> str:
    meta = found if isinstance(found := doc.get("metadata"), dict) else {}
    name = meta.get("name") or "?"
    return f"{doc.get('kind')} {meta['namespace']}/{name}" if meta.get("namespace") else f"{doc.get('kind')} {name}"


def _parse(model: type[BaseModel], doc: dict[str, Any], source: str, path: str) -> Any:
    try:
        return model.model_validate(doc)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"] if not str(part).startswith("function-"))
        prefix = f"{path}({_label(doc)})" if path else f"({_label(doc)})"
        raise InputError(
            source, first["msg"].removeprefix("Value error, "), f"{prefix}.{where}" if where else prefix
        ) from None


def _namespaced(obj: ResourceClaim | ResourceClaimTemplate) -> ResourceClaim | ResourceClaimTemplate:
    """Claims and templates without a namespace live in `default`, as kubectl would create them."""
    if obj.metadata.namespace:
        return obj
    return obj.model_copy(update={"metadata": obj.metadata.model_copy(update={"namespace": "default"})})


def load_objects(sources: list[str], pods: bool = True, version: Version = NEWEST) -> DraObjects:
    """Every DRA object (and, where `pods`, every Pod) of the files; unknown kinds and duplicates are errors, and so is
    a selector that the release's API server does not compile."""
    return objects_from([(source, read_all(source)) for source in sources], pods, version)


def objects_from(documents: list[tuple[str, list[Any]]], pods: bool = True, version: Version = NEWEST) -> DraObjects:
    """The same from documents already read (an API server's answers): (source named in errors, documents)."""
    found = DraObjects()
    for source, docs in documents:
        for number, doc in enumerate(docs):
            base = f"documents[{number}]." if number else ""
            for path, item in _items(doc, source, base):
                _add(found, item, source, path, pods, version)
    found.slices = [tainted(item, found.taint_rules) for item in found.slices]
    return found


def tainted(item: ResourceSlice, rules: list[DeviceTaintRule]) -> ResourceSlice:
    """The slice as the scheduler's ResourceSlice tracker hands it to the allocator: each rule's taint appended to
    the taints of every device its selector matches (a rule without a selector matches none)."""
    spec = item.spec
    devices = list(spec.devices)
    for rule in rules:
        selector = rule.spec.device_selector
        if selector is None:
            continue
        for index, device in enumerate(devices):
            if selector.matches(spec.driver, spec.pool.name, device.name):
                devices[index] = device.model_copy(update={"taints": (*device.taints, rule.spec.taint)})
    if devices == list(spec.devices):
        return item
    return item.model_copy(update={"spec": spec.model_copy(update={"devices": tuple(devices)})})


def _add(found: DraObjects, item: Any, source: str, path: str, pods: bool, release: Version) -> None:
    if not isinstance(item, dict):
        raise InputError(source, f"expected an object, got {type(item).__name__}", path)
    version, kind = item.get("apiVersion"), item.get("kind")
    if pods and (version, kind) == ("v1", "Pod"):
        found.pods.append(_pod(item, source, path))
        return
    if version != API_VERSION or kind not in DRA_KINDS:
        wanted = ", ".join(DRA_KINDS) + (" or a v1 Pod" if pods else "")
        raise InputError(
            source,
            f"unknown apiVersion/kind {version}/{kind}: expected {API_VERSION} {wanted}",
            f"{path}.kind" if path else "kind",
        )
    obj = _parse(_MODELS[kind], item, source, path)
    label = (
        _label(item) if not isinstance(obj, ResourceClaim | ResourceClaimTemplate) else f"{kind} {_namespaced(obj).key}"
    )
    prefix = f"{path}({label})" if path else f"({label})"
    if label in found.origin:
        raise InputError(source, f"{label} appears more than once", prefix)
    found.origin[label] = (source, prefix)
    _compile_all(obj, label, source, prefix, release)
    if isinstance(obj, DeviceClass):
        found.classes[obj.metadata.name] = obj
    elif isinstance(obj, DeviceTaintRule):
        found.taint_rules.append(obj)
    elif isinstance(obj, ResourceClaim):
        found.claims.append(_namespaced(obj))  # type: ignore[arg-type]
    elif isinstance(obj, ResourceClaimTemplate):
        template = _namespaced(obj)
        found.templates[template.key] = template  # type: ignore[assignment]
    else:
        found.slices.append(obj)


def selector_paths(obj: Any) -> list[tuple[str, str]]:
    """(field path, expression) of every CEL selector in a DeviceClass, claim or template."""
    if isinstance(obj, DeviceClass):
        return [(f"spec.selectors[{i}].cel.expression", s.cel.expression) for i, s in enumerate(obj.spec.selectors)]
    if isinstance(obj, ResourceClaim | ResourceClaimTemplate):
        spec, base = (obj.spec, "spec") if isinstance(obj, ResourceClaim) else (obj.spec.spec, "spec.spec")
        found: list[tuple[str, str]] = []
        for i, request in enumerate(spec.devices.requests):
            alternatives = (
                [("exactly", request.exactly)]
                if request.exactly
                else [(f"firstAvailable[{k}]", sub) for k, sub in enumerate(request.first_available or ())]
            )
            for where, alternative in alternatives:
                found.extend(
                    (f"{base}.devices.requests[{i}].{where}.selectors[{j}].cel.expression", s.cel.expression)
                    for j, s in enumerate(alternative.selectors)
                )
        return found
    return []


def _compile_all(obj: Any, label: str, source: str, prefix: str, version: Version) -> None:
    """The API server compiles every selector when the object is created: one that does not compile is refused."""
    for field_path, expression in selector_paths(obj):
        try:
            compile_selector(expression, version)
        except CelError as error:
            kind, _, name = label.partition(" ")
            owner = "class" if kind == "DeviceClass" else kind[0].lower() + kind[1:]
            raise InputError(
                source, f"CEL compile error in {owner} {name}: {error}", f"{prefix}.{field_path}"
            ) from None


def _pod(item: dict[str, Any], source: str, path: str) -> KubePod:
    try:
        return parse_pod(item, source)
    except InputError as error:
        raise InputError(source, error.message, f"{path}.{error.field}" if path else error.field) from None
