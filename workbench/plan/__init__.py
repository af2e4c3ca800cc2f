"""Experiment plans: a TOML file validated and expanded into runs (baseline added automatically).
The data model is in `model`, the reading of a file in `loader`, its fields' checks in `fields`."""

from workbench.plan.fields import (  # noqa: F401  (re-exported: the plan's public names)
    DEMO_PREFIX, REPO_ID, SHAPE_PREFIX, PlanError, _list, _number, _vocab_size, check_pair, resolve_model)
from workbench.plan.loader import load, loads  # noqa: F401
from workbench.plan.model import (  # noqa: F401
    MODES, TEXT_DRAFTERS, AutoRepeats, Plan, Run, Server, _hash, parse_parallel)
