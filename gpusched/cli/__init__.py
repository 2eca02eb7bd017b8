"""The `gpusched` command: parse, load, call one library function, render (rich text or --json).

Each module here registers its commands on the one Typer app; rendering lives beside the commands. The console
script imports only the module of the command it runs (the solvers, the CEL library and the kubernetes client are
heavy); `gpusched.cli.app` as an attribute loads them all.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from . import common as _common

__all__ = ["app", "main", "kubectl_main", "COMMAND_MODULES", "load"]

# top-level command or group -> the module that registers it
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(("scenarios", "schema", "advertised", "place", "frag", "allreduce", "gang", "k8s"), "core"),
    "init": "importer",
    "conformance": "conformance",
    "cluster": "conformance",
    "slices": "dra",
    "dra": "dra",
    "explain": "explain",
    "import": "importer",
    "plan": "plan",
    "validate": "plan",
    "mig": "mig",
    "map": "gpumap",
    "preempt": "repair",
    "defrag": "repair",
    "bench": "bench",
    "apply": "apply",
    "scale": "scale",
}
MODULES = (
    "apply",
    "core",
    "bench",
    "conformance",
    "dra",
    "explain",
    "gpumap",
    "importer",
    "mig",
    "plan",
    "repair",
    "scale",
)


def load(module: str | None = None) -> Any:
    """Register the commands of one module (or all) on the app, with the shared conventions, and return the app."""
    for name in MODULES if module is None else (module,):
        importlib.import_module(f"{__name__}.{name}")
    return _common.conventions(_common.app)


def main() -> Any:
    """The console script: `--help` or an unknown command loads everything, so Typer can list or refuse it."""
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), "")
    return load(COMMAND_MODULES[command] if command in COMMAND_MODULES else None)()


def kubectl_main() -> Any:
    """`kubectl gpusched ...` (the kubectl-gpusched plugin): `gpusched ...` on kubectl's kubeconfig and current
    context wherever a command is given no cluster; its flags (-n, --context, --kubeconfig) are the commands' own."""
    from .kubectl import plugin_kubeconfig

    sys.argv[0] = "kubectl gpusched"
    with _common.plugin_mode(plugin_kubeconfig()):
        return main()


def __getattr__(name: str) -> Any:
    if name == "app":
        return load()
    raise AttributeError(name)
