"""The volume plugins' PreFilter where a claim is missing: the one part of VolumeRestrictions and VolumeBinding
gpusched models. Everything else they check (binding, zones, limits, access modes) is `not_modelled`.

VolumeRestrictions' PreFilter reads each persistentVolumeClaim volume's claim first (for ReadWriteOncePod), and a
missing one rejects the pod with the lister's NotFound error; VolumeBinding's then does the same for the claims of
ephemeral volumes (`<pod>-<volume>`, until the ephemeral-volume controller creates them). Both are
UnschedulableAndUnresolvable: the FitError is the PreFilter's message.
"""

from __future__ import annotations

from ....models.kube import KubePod
from ..names import VOLUME_BINDING

__all__ = ["RESTRICTIONS", "BINDING", "ERR_REASON_NOT_FOUND", "missing_claim"]

RESTRICTIONS, BINDING = "VolumeRestrictions", VOLUME_BINDING
ERR_REASON_NOT_FOUND = 'persistentvolumeclaim "{name}" not found'


def missing_claim(pod: KubePod, claims: frozenset[str]) -> tuple[str, str] | None:
    """(plugin, message) for the first claim the pod's volumes name that does not exist; None if all exist."""
    for plugin, kind in ((RESTRICTIONS, "persistentVolumeClaim"), (BINDING, "ephemeral")):
        for volume_kind, name in pod.claim_volumes:
            if volume_kind == kind and f"{pod.namespace}/{name}" not in claims:
                return plugin, ERR_REASON_NOT_FOUND.format(name=name)
    return None
