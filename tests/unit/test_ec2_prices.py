"""components/tables/ec2_prices.py is the On-Demand price table of the pinned Karpenter AWS provider
(tools/mod/karpenter/go.mod: github.com/aws/karpenter-provider-aws v1.15.0, the controller pins.py
deploys), read from the Go module cache and generated (UPDATE_GOLDEN=1 rewrites it): the test fails
while the table differs from the module's file. Only data is read from the module; no Go code is
copied into the project."""

from __future__ import annotations

import os
import re
from pathlib import Path

from components.images.settings import CONTROL_PLANE_BUILD_INSTANCE, GPU_NODE_BUILD_INSTANCE
from components.settings.load import read_stack_file
from components.tables import ec2_prices as table
from components.tables import pins
from components.tables.instance_types import GPU_INSTANCE_TYPES
from components.tables.paths import PROJECT_DIR
from components.validate import parse
from tests.helpers.tools import skip_or_fail

PATH = Path(table.__file__)
GO_MOD = PROJECT_DIR / "tools" / "mod" / "karpenter" / "go.mod"
MODULE = "github.com/aws/karpenter-provider-aws"
FILE = "pkg/providers/pricing/zz_generated.pricing_aws.go"
# What this project can launch besides the GPU table: control planes and the control-plane image's
# build instance (general purpose, Intel, AMD and Graviton), large to 4xlarge.
GENERAL_FAMILIES = ("m6i", "m7i", "m7a", "m7g", "m8i")
GENERAL_SIZES = ("large", "xlarge", "2xlarge", "4xlarge")
COMMITTED = sorted((PROJECT_DIR / "stacks").glob("Pulumi.aws-*.yaml"))


def pinned_version() -> str:
    found = re.search(rf"^\s*{re.escape(MODULE)} (v\S+)$", GO_MOD.read_text(), re.M)
    assert found, f"{GO_MOD} requires no {MODULE}"
    return found.group(1)


def module_file(version: str) -> Path:
    """The pinned module's price file in the Go module cache ($GOMODCACHE, else $GOPATH/pkg/mod,
    else ~/go/pkg/mod, as `go env GOMODCACHE` answers), or a skip naming how to fetch it."""
    cache = os.environ.get("GOMODCACHE") or str(Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod")
    path = Path(cache) / f"{MODULE}@{version}" / FILE
    if not path.is_file():
        skip_or_fail(f"{path} is not in the Go module cache: `cd tools/mod/karpenter && go mod download {MODULE}` "
                     "fetches it (tools/build.sh does)")
    return path


def wanted() -> set[str]:
    cp_types = {parse(read_stack_file(p)["ck8s-gpu:settings"], str(p)).control_plane.instance_type for p in COMMITTED}
    general = {f"{f}.{s}" for f in GENERAL_FAMILIES for s in GENERAL_SIZES}
    builders = {GPU_NODE_BUILD_INSTANCE, *CONTROL_PLANE_BUILD_INSTANCE.values()}
    return set(GPU_INSTANCE_TYPES) | cp_types | general | builders


def parse_go(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    generated = re.search(r"^// generated at (\S+) for ", text, re.M)
    assert generated, "no `// generated at` line"
    regions: dict[str, dict[str, str]] = {}
    for block in re.finditer(r'^\t"([a-z0-9-]+)": \{\n(.*?)^\t\},?$', text, re.M | re.S):
        regions[block.group(1)] = dict(re.findall(r'"([a-z0-9.-]+)": ([0-9.]+)', block.group(2)))
    assert regions, "no region blocks"
    return generated.group(1), regions


def render(version: str, generated: str, regions: dict[str, dict[str, str]]) -> str:
    keep = wanted()
    body = []
    for region in sorted(regions):
        prices = {t: p for t, p in regions[region].items() if t in keep}
        body.append(f'    "{region}": {{')
        body += [f'        "{t}": {float(p)!r},' for t, p in sorted(prices.items())]
        body.append("    },")
    rows = "\n".join(body)
    return f'''"""EC2 On-Demand prices (USD per hour, Linux, shared tenancy) per Region: the static table of the
Karpenter AWS provider this project pins ({MODULE} {version},
{FILE},
"generated at {generated}"), for the types this project can launch: the GPU table
(components/tables/instance_types.py), the committed stacks' control planes, the image program's
build instances and the m6i/m7i/m7a/m7g/m8i sizes large to 4xlarge. Karpenter ships this table for
us-east-1 only (it asks the Pricing API at run time elsewhere): a Region missing here has no price in
the table, and `ck8s-gpu plan --cost` says so. Generated, never edited: tests/unit/test_ec2_prices.py
regenerates it from the Go module cache with UPDATE_GOLDEN=1 and fails while it differs.
"""

from __future__ import annotations

SOURCE_MODULE = "{MODULE}"
SOURCE_VERSION = "{version}"
SOURCE_FILE = "{FILE}"
GENERATED_AT = "{generated}"

ON_DEMAND: dict[str, dict[str, float]] = {{
{rows}
}}
'''


def test_the_table_is_the_pinned_karpenter_providers() -> None:
    version = pinned_version()
    assert pins.CHARTS["karpenter"].version == version.removeprefix("v"), "the controller and its prices are a pair"
    generated, regions = parse_go(module_file(version).read_text())
    want = render(version, generated, regions)
    if os.environ.get("UPDATE_GOLDEN"):
        PATH.write_text(want)
    assert PATH.read_text() == want, "regenerate: UPDATE_GOLDEN=1 pytest tests/unit/test_ec2_prices.py"


def test_the_table_says_where_it_comes_from() -> None:
    assert table.SOURCE_MODULE == MODULE
    assert pinned_version() == table.SOURCE_VERSION
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", table.GENERATED_AT)
    assert table.ON_DEMAND, "no Region"


def test_the_committed_stacks_control_planes_and_build_instances_are_priced_in_us_east_1() -> None:
    us_east_1 = table.ON_DEMAND["us-east-1"]
    cp_types = {parse(read_stack_file(p)["ck8s-gpu:settings"], str(p)).control_plane.instance_type for p in COMMITTED}
    assert cp_types - set(us_east_1) == set()
    assert {GPU_NODE_BUILD_INSTANCE, *CONTROL_PLANE_BUILD_INSTANCE.values()} - set(us_east_1) == set()


def test_gpu_types_without_a_price_are_the_ones_karpenter_does_not_list() -> None:
    """p5e (Capacity Blocks) and the GB200 UltraServers have no On-Demand price in Karpenter's table:
    `plan --cost` names them unpriced."""
    assert set(GPU_INSTANCE_TYPES) - set(table.ON_DEMAND["us-east-1"]) == {"p5e.48xlarge", "p6e-gb200.36xlarge"}
