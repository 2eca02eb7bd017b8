"""`kubectl gpusched ...`: the kubectl-gpusched plugin reads the cluster, context and namespace as kubectl does.

kubectl runs a plugin with every argument after the plugin's name, its own flags included, and parses none of
them; so the plugin takes kubectl's: `--kubeconfig` (else the first file of $KUBECONFIG, else ~/.kube/config),
`--context` (else the kubeconfig's current context) and `-n/--namespace` (else the context's namespace, else
`default`). The namespace completes a pod named without one: explain's POD, preempt's POD, k8s --pod.
Not modelled: kubectl merges every file of $KUBECONFIG; gpusched reads the first.
"""

from __future__ import annotations

from typing import Any

import typer

from ..errors import InputError
from ..files import parse, read_text
from ..scenarios.live import default_kubeconfig

__all__ = ["LIVE_COMMANDS", "POD_ARGUMENTS", "plugin_argv"]

# commands that read a live cluster with --kubeconfig; `mig` is a group (`mig plan`)
LIVE_COMMANDS = ("explain", "k8s", "import", "dra", "preempt", "defrag", "plan", "mig")
# where each command names a pod: its first argument, or an option
POD_ARGUMENTS: dict[str, int | str] = {"explain": 0, "preempt": 0, "k8s": "--pod"}
NAMESPACE_FLAGS = ("-n", "--namespace")


def _take_namespace(args: list[str]) -> tuple[list[str], str | None]:
    """The arguments without kubectl's -n/--namespace (`-n NS`, `-nNS`, `-n=NS`, `--namespace[=]NS`), and its value."""
    kept, namespace, at = [], None, 0
    while at < len(args):
        arg = args[at]
        if arg == "--":
            kept += args[at:]
            break
        if arg in NAMESPACE_FLAGS:
            if at + 1 == len(args):
                raise ValueError(f"{arg}: expected a namespace")
            namespace, at = args[at + 1], at + 2
            continue
        if arg.startswith("--namespace="):
            namespace = arg.removeprefix("--namespace=")
        elif arg.startswith("-n") and not arg.startswith("--"):
            namespace = arg[2:].removeprefix("=")
        else:
            kept.append(arg)
        at += 1
    if namespace == "":
        raise ValueError("-n/--namespace: expected a namespace")
    return kept, namespace


def _option(args: list[str], name: str) -> str | None:
    """The value of `--name V` or `--name=V` (the last one, as click takes it)."""
    found = None
    for at, arg in enumerate(args):
        if arg == name and at + 1 < len(args):
            found = args[at + 1]
        elif arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
    return found


def context_namespace(kubeconfig: str, context: str | None) -> str:
    """The namespace of the context (named, else the current one), as kubectl reads it; `default` when it names
    none, or when the file cannot be read (the command itself then says why)."""
    try:
        doc = parse(kubeconfig, read_text(kubeconfig))
    except (InputError, OSError):
        return "default"
    if not isinstance(doc, dict):
        return "default"
    wanted = context or doc.get("current-context")
    for entry in doc.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == wanted and isinstance(entry.get("context"), dict):
            return str(entry["context"].get("namespace") or "default")
    return "default"


def _command(args: list[str], app: typer.Typer) -> list[int]:
    """The positions of the arguments of the command the arguments run (option values left out). Typer's
    commands are read by their attributes (`commands`, `params`): Typer carries its own copy of click."""
    command: Any = typer.main.get_command(app)
    positions, at = [], 0
    takes: dict[str, int] = {}
    while at < len(args):
        arg = args[at]
        if arg.startswith("-") and arg != "-":
            at += 1 + (0 if "=" in arg else takes.get(arg, 0))
            continue
        if arg in (getattr(command, "commands", None) or {}):
            command = command.commands[arg]
            takes = {
                name: (0 if param.is_flag or param.count else param.nargs)
                for param in command.params
                if param.param_type_name == "option"
                for name in [*param.opts, *param.secondary_opts]
            }
        else:
            positions.append(at)
        at += 1
    return positions


def _qualified(name: str, namespace: str) -> str:
    return name if "/" in name else f"{namespace}/{name}"


def plugin_argv(args: list[str], app: typer.Typer) -> list[str]:
    """The gpusched arguments for the plugin's: --kubeconfig kubectl's file unless the command names a cluster,
    and the pod's namespace completed. ValueError for a namespace given to a command that names no pod."""
    args, namespace = _take_namespace(args)
    command = next((arg for arg in args if not arg.startswith("-")), "")
    named = any(arg.split("=")[0] in ("--kubeconfig", "--cluster") for arg in args)
    if command not in POD_ARGUMENTS and namespace is not None:
        pods = ", ".join(POD_ARGUMENTS)
        raise ValueError(
            f"-n/--namespace completes a pod's name: only with {pods} (`{command or 'gpusched'}` names none)"
        )
    if command in LIVE_COMMANDS and not named:
        args = [*args, "--kubeconfig", default_kubeconfig()]
    if command not in POD_ARGUMENTS:
        return args
    kubeconfig = _option(args, "--kubeconfig")
    if namespace is None and kubeconfig is None:
        return args  # a cluster file (--cluster) names its pods its own way
    if namespace is None and kubeconfig is not None:
        namespace = context_namespace(kubeconfig, _option(args, "--context"))
    namespace = namespace or "default"
    where = POD_ARGUMENTS[command]
    if isinstance(where, str):
        return [
            _qualified(arg, namespace) if at and args[at - 1] == where else
            (f"{where}={_qualified(arg.split('=', 1)[1], namespace)}" if arg.startswith(where + "=") else arg)
            for at, arg in enumerate(args)
        ]  # fmt: skip
    positions = _command(args, app)
    if len(positions) > where:
        at = positions[where]
        args = [*args[:at], _qualified(args[at], namespace), *args[at + 1 :]]
    return args
