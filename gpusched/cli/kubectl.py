"""`kubectl gpusched ...`: the kubectl-gpusched plugin reads the cluster, context and namespace as kubectl does.

kubectl runs a plugin with every argument after the plugin's name, its own flags included, and parses none of
them. The plugin parses nothing either: every command's own options (click's parser) take kubectl's
`--kubeconfig`, `--context` and `-n/--namespace`, and a command given no cluster reads kubectl's: `--kubeconfig`,
else $KUBECONFIG, else ~/.kube/config, on `--context` or the current context. A pod named without a namespace is in
`-n`'s, else the context's, else `default`.
"""

from __future__ import annotations

from ..errors import GpuschedError
from ..scenarios.kubeconfig import load
from ..scenarios.live import default_kubeconfig

__all__ = ["context_namespace", "plugin_kubeconfig"]


def plugin_kubeconfig() -> str:
    """The kubeconfig kubectl reads when given none."""
    return default_kubeconfig()


def context_namespace(kubeconfig: str, context: str | None) -> str:
    """The namespace of the context (named, else the current one), as kubectl reads it from the merged files;
    `default` when it names none, or when the files cannot be read (the command itself then says why)."""
    try:
        return load(kubeconfig).resolve(context).namespace
    except GpuschedError:  # the command, reading the cluster, says why
        return "default"
