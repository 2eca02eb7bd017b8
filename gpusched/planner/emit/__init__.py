"""Configuration a user can apply, built from the same model as the command that motivates it.

- `scheduler_config` (scheduler.py): the KubeSchedulerConfiguration whose profile ranks nodes as
  `place --view extended --gpu-weight N` does (`place --emit-scheduler-config`).
- `kueue_setup` (kueue.py): Kueue ResourceFlavors, a ClusterQueue and a LocalQueue (`gang --emit-kueue`).
- the mig-parted file of a MIG plan (`mig plan --emit`) is built with the plan, in planner.optimize.mig.migparted.

Each returns an `Emitted` (emitted.py): the objects, the comment lines that say how to apply them, and the YAML
text. Every refusal is a ValueError naming the option, so the CLI exits 2 before anything is written.
"""

from __future__ import annotations

from .emitted import Emitted, gpu_resources
from .kueue import QUEUE_LABEL, Flavor, JobAdmission, KueueSetup, kueue_setup
from .scheduler import DEFAULT_GPU_WEIGHT, SchedulerConfig, scheduler_config

__all__ = [
    "DEFAULT_GPU_WEIGHT",
    "QUEUE_LABEL",
    "Emitted",
    "Flavor",
    "JobAdmission",
    "KueueSetup",
    "SchedulerConfig",
    "gpu_resources",
    "kueue_setup",
    "scheduler_config",
]
