"""Cross-field rules of the settings, one module per area. Each rule yields every problem it finds;
none stops at the first. The vocabulary (Problem, field paths) is `settings/problems.py`;
`settings/check.py` runs these and the offline rules; rules that need the add-on graph, a platform
or AWS's naming run in components/validate.py, after these: `validate()` is the one gate."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..model import Settings
from ..problems import Problem
from .autoscaling import _autoscaling
from .cluster import _control_plane, _features, _kubernetes, _local, _platform, _production, _region
from .existing_aws import _existing_aws
from .gpu_stack import _addon_repositories, _addon_versions, _dra_manager, _driver, _mig, _toolkit
from .mig import _mig_layouts
from .network import _networks
from .pools import _pools
from .queues import _queues
from .smoke import _smoke, _smoke_pool

Rule = Callable[[Settings], Iterator[Problem]]

# In this order (the order problems are reported in).
RULES: tuple[Rule, ...] = (
    _region, _production, _control_plane, _kubernetes, _features, _pools, _autoscaling, _existing_aws, _networks,
    _driver, _toolkit, _dra_manager, _addon_versions, _addon_repositories, _queues, _smoke, _smoke_pool, _mig,
    _mig_layouts, _platform, _local,
)
