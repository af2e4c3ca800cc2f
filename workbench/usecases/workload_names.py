"""The names of the workloads the Experiment form offers: the built-in prompt sets and their
families, the benchmark datasets, and random words (workbench.load)."""

from __future__ import annotations

from workbench.load.datasets import DATASETS
from workbench.load.workloads import BUILTIN, FAMILIES, RANDOM

__all__ = ["BUILTIN", "DATASETS", "FAMILIES", "RANDOM"]
