"""components/tables/ec2_instance_types.py is botocore's EC2 `InstanceType` enum at the pinned
botocore, generated (UPDATE_GOLDEN=1 rewrites it), and the settings refuse on aws what it lacks,
naming the nearest real types."""

from __future__ import annotations

import os
from pathlib import Path

import botocore
import botocore.session
import pytest

from components.settings import SettingsError
from components.tables import ec2_instance_types as table
from components.tables.instance_types import GPU_INSTANCE_TYPES
from components.validate import parse

PATH = Path(table.__file__)


def render() -> str:
    model = botocore.session.get_session().get_service_model("ec2")
    names = sorted(model.shape_for("InstanceType").enum)
    lines, line = [], "   "
    for n in names:
        piece = f' "{n}",'
        if len(line) + len(piece) > 116:
            lines.append(line)
            line = "   "
        line += piece
    lines.append(line)
    body = "\n".join(lines)
    return f'''"""Every EC2 instance type, as EC2's API model names them: the `InstanceType` enum of botocore
{botocore.__version__}'s ec2 service model (API version {model.api_version}; botocore is pinned in pyproject.toml,
through boto3). Generated, never edited: tests/unit/test_ec2_instance_types.py regenerates it with
UPDATE_GOLDEN=1 and fails while it differs from the installed botocore, so a botocore bump brings
the types AWS added since. A type newer than the pin is refused until then (the message says so).
"""

from __future__ import annotations

BOTOCORE = "{botocore.__version__}"
EC2_API_VERSION = "{model.api_version}"

EC2_INSTANCE_TYPES: frozenset[str] = frozenset((
{body}
))
'''


def test_the_table_is_the_pinned_botocores() -> None:
    want = render()
    if os.environ.get("UPDATE_GOLDEN"):
        PATH.write_text(want)
    assert PATH.read_text() == want, "regenerate: UPDATE_GOLDEN=1 pytest tests/unit/test_ec2_instance_types.py"
    assert botocore.__version__ == table.BOTOCORE


def test_every_gpu_type_the_project_knows_is_real() -> None:
    assert set(GPU_INSTANCE_TYPES) - table.EC2_INSTANCE_TYPES == set()


AWS = {"platform": "aws", "environment": "dev", "region": "eu-west-1",
       "network": {"availabilityZones": ["eu-west-1a", "eu-west-1b"]}}


def problems(raw: dict[str, object]) -> dict[str, str]:
    with pytest.raises(SettingsError) as e:
        parse(raw, "test")
    return dict(e.value.problems)


@pytest.mark.parametrize("typo", ["p5.48xlage", "p5.48XLARGE", "g6.12xl", "p6e-gb200.36xlarge.", "m7i.xlarge "])
def test_a_typo_is_named_with_the_nearest_real_types_even_with_its_gpus_declared(typo: str) -> None:
    pool = {"name": "gpu", "instanceType": typo, "gpu": {"count": 8, "productName": "NVIDIA H100 80GB HBM3",
                                                          "memoryGiB": 80}}
    found = problems({**AWS, "nodePools": [pool]})
    why = found["settings.nodePools[0].instanceType"]
    assert f"is not an EC2 instance type (botocore {table.BOTOCORE}'s EC2 model" in why, why
    assert "did you mean" in why or "no close match" in why, why


def test_the_nearest_types_are_offered() -> None:
    found = problems({**AWS, "nodePools": [{"name": "gpu", "instanceType": "p5.48xlage"}]})
    assert "did you mean p5.48xlarge" in found["settings.nodePools[0].instanceType"]


def test_the_control_plane_type_is_checked_too() -> None:
    found = problems({**AWS, "controlPlane": {"instanceType": "m7i.xlarg"}})
    assert "did you mean m7i.xlarge" in found["settings.controlPlane.instanceType"]


def test_a_real_type_outside_the_gpu_table_still_asks_for_its_gpus() -> None:
    found = problems({**AWS, "nodePools": [{"name": "gpu", "instanceType": "m7i.xlarge"}]})
    assert "is not in the GPU instance-type table" in found["settings.nodePools[0].instanceType"]


def test_other_platforms_name_pools_by_any_type() -> None:
    # existing: the nodes are whatever the cluster runs (not EC2); the GPUs are declared.
    parse({"platform": "existing", "environment": "dev", "nodePools": [
        {"name": "gpu", "instanceType": "on-prem-dgx", "gpu": {"count": 8, "productName": "NVIDIA H100 80GB HBM3",
                                                               "memoryGiB": 80}}]}, "test")
