"""Region-scoped derivation: what each stamped stack gets, and every refusal with its fix."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.settings.load import SETTINGS_KEY, SettingsError
from components.stamping.derive import derive, derive_all, geography, stack_name, unused_overrides
from components.stamping.overrides import load_overrides, parse_overrides
from tests.unit.stamping.helpers import DATA, template, zoned


def _prod_with(**extra: Any) -> tuple[dict[str, Any], Any]:
    config, _ = template("aws-prod")
    config = copy.deepcopy(config)
    config.update(extra)
    from components.validate import from_config as settings_from_config

    return config, settings_from_config(config, "aws-prod", offline=True)


def test_region_and_provider_region_are_derived_secrets_are_not_copied() -> None:
    config, settings = _prod_with(**{"aws:region": "us-east-1", "ck8s-gpu:kubeconfig": {"secure": "v1:abc"}})
    s = derive("aws-prod", config, settings, "us-east-2", zoned("us-east-2"))
    assert s.stack == "aws-prod-us-east-2" == stack_name("aws-prod", "us-east-2")
    assert s.settings.region == "us-east-2" and s.config[SETTINGS_KEY]["region"] == "us-east-2"
    assert s.config["aws:region"] == "us-east-2"
    assert "ck8s-gpu:kubeconfig" not in s.config and s.secrets_to_set == ("ck8s-gpu:kubeconfig",)
    assert s.settings.cluster_name == "ck8s-prod-us-east-2"
    # Everything else is the template's (the zone-scoped fields are this region's: zoned()).
    zone_scoped = {"availability_zone", "capacity_reservation", "placement"}
    assert ([p.model_dump(exclude=zone_scoped) for p in s.settings.node_pools]
            == [p.model_dump(exclude=zone_scoped) for p in settings.node_pools])
    assert s.settings.protection == settings.protection


def test_template_is_not_modified() -> None:
    config, settings = template("aws-prod")
    before = copy.deepcopy(config)
    derive("aws-prod", config, settings, "us-east-2",
           zoned("us-east-2", {"nodePools": [{"name": "h100", "maxSize": 3}]}))
    assert config == before


def test_backup_region_inherited_within_the_geography_and_noted() -> None:
    config, settings = template("aws-prod")
    s = derive("aws-prod", config, settings, "us-east-2", zoned("us-east-2"))
    assert s.settings.backup is not None and s.settings.backup.region == "us-west-2"
    assert any("us-west-2" in n for n in s.notes)


@pytest.mark.parametrize(("region", "fragment"), [
    ("us-west-2", "which is this region"),
    ("eu-central-1", "outside eu"),
])
def test_backup_region_must_be_given_when_inheriting_would_be_wrong(region: str, fragment: str) -> None:
    config, settings = template("aws-prod")
    with pytest.raises(SettingsError) as err:
        derive("aws-prod", config, settings, region)
    assert fragment in err.value.message and "backup.region" in err.value.message
    assert "--backup-region" in err.value.message  # the fix is named


def test_backup_region_from_override_or_flag() -> None:
    config, settings = template("aws-prod")
    s = derive("aws-prod", config, settings, "eu-central-1", zoned("eu-central-1", {"backup": {"region": "eu-west-1"}}))
    assert s.settings.backup is not None and s.settings.backup.region == "eu-west-1"
    s = derive("aws-prod", config, settings, "eu-central-1", zoned("eu-central-1", {"backup": {"region": "eu-west-1"}}),
               backup_region="eu-north-1")
    assert s.settings.backup is not None and s.settings.backup.region == "eu-north-1"  # the flag wins
    with pytest.raises(SettingsError, match="--backup-region"):
        derive("aws-prod", config, settings, "eu-central-1", backup_region="eu-central-1")


def test_the_templates_own_region_and_non_aws_templates_are_refused() -> None:
    config, settings = template("aws-dev")
    with pytest.raises(SettingsError, match="template's own region"):
        derive("aws-dev", config, settings, "us-east-1")
    kind_config, kind_settings = template("kind")
    with pytest.raises(SettingsError, match="only aws stacks"):
        derive("kind", kind_config, kind_settings, "eu-west-1")
    with pytest.raises(SettingsError, match="not an AWS region"):
        derive("aws-dev", config, settings, "mars-north-1a")


def test_an_existing_vpc_must_be_replaced_per_region() -> None:
    config, _ = template("aws-dev")
    config = copy.deepcopy(config)
    config[SETTINGS_KEY]["network"]["existing"] = {"vpcId": "vpc-0123456789abcdef0",
                                                   "privateSubnetIds": ["subnet-1", "subnet-2"],
                                                   "publicSubnetIds": ["subnet-p1", "subnet-p2"]}
    from components.validate import from_config as settings_from_config

    settings = settings_from_config(config, "dev", offline=True)
    with pytest.raises(SettingsError, match="exists only in us-east-1"):
        derive("aws-dev", config, settings, "us-east-2")
    s = derive("aws-dev", config, settings, "us-east-2", {"network": {"existing": None}})
    assert s.settings.network.existing is None
    own = {"vpcId": "vpc-0fedcba9876543210", "privateSubnetIds": ["subnet-a", "subnet-b"],
           "publicSubnetIds": ["subnet-c", "subnet-d"]}
    s = derive("aws-dev", config, settings, "us-east-2", {"network": {"existing": own}})
    assert s.settings.network.existing is not None and s.settings.network.existing.vpc_id == own["vpcId"]


def test_a_pool_ami_id_must_be_replaced_per_region_and_a_parameter_path_carries_over() -> None:
    config, _ = template("aws-dev")
    config = copy.deepcopy(config)
    config[SETTINGS_KEY]["gpuStack"] = {"driver": "host"}
    config[SETTINGS_KEY]["nodePools"][0]["ami"] = "ami-0123456789abcdef0"
    from components.validate import from_config as settings_from_config

    settings = settings_from_config(config, "dev", offline=True)
    pool = settings.node_pools[0].name
    with pytest.raises(SettingsError) as err:
        derive("aws-dev", config, settings, "us-east-2")
    assert f"pool '{pool}': the template's image ami-0123456789abcdef0 exists only in us-east-1" in str(err.value)
    own = {"nodePools": [{"name": pool, "ami": "ami-0fedcba9876543210"}]}
    assert derive("aws-dev", config, settings, "us-east-2", own).settings.node_pools[0].ami == "ami-0fedcba9876543210"
    path = "/ml-platform/images/ubuntu-24.04-nvidia-595/ami-id"
    config[SETTINGS_KEY]["nodePools"][0]["ami"] = path
    settings = settings_from_config(config, "dev", offline=True)
    assert derive("aws-dev", config, settings, "us-east-2").settings.node_pools[0].ami == path


def test_restore_points_at_the_template_clusters_backups() -> None:
    config, settings = template("aws-prod")
    s = derive("aws-prod", config, settings, "us-west-2", zoned("us-west-2"), backup_region="us-east-2", restore=True)
    assert s.settings.backup is not None and s.settings.backup.restore_from is not None
    assert s.settings.backup.restore_from.cluster_name == "ck8s-prod-us-east-1"
    assert s.settings.backup.restore_from.region == "us-west-2"
    dev_config, dev_settings = template("aws-dev")
    with pytest.raises(SettingsError, match="no backups to restore from"):
        derive("aws-dev", dev_config, dev_settings, "us-east-2", restore=True)


def test_merged_settings_are_validated_like_any_stack() -> None:
    config, settings = template("aws-prod")
    with pytest.raises(SettingsError) as err:
        derive("aws-prod", config, settings, "us-east-2",
               zoned("us-east-2", {"nodePools": [{"name": "h100", "maxSize": 0}]}))
    assert "settings.nodePools[1].desiredSize" in err.value.message


def test_all_regions_problems_in_one_error_and_nothing_stamped() -> None:
    config, _ = template("aws-prod")
    with pytest.raises(SettingsError) as err:
        derive_all("aws-prod", config, ["us-east-2", "eu-central-1", "us-west-2", "us-east-2"],
                   {r: zoned(r) for r in ("us-east-2", "eu-central-1", "us-west-2")})
    paths = [p for p, _ in err.value.problems]
    assert "--regions" in paths  # listed twice
    assert any(p.startswith("[eu-central-1]") for p in paths)
    assert any(p.startswith("[us-west-2]") for p in paths)
    assert not any(p.startswith("[us-east-2]") for p in paths)  # that one was fine


def test_overrides_file_shape_and_unused_regions() -> None:
    overrides = load_overrides(DATA / "aws-prod.regions.yaml")
    assert set(overrides) == {"us-east-2", "eu-central-1"}
    assert unused_overrides(["us-east-2"], overrides) == ["eu-central-1"]
    assert load_overrides(DATA / "missing.yaml") == {}
    with pytest.raises(SettingsError) as err:
        parse_overrides({"regions": {"us-east-2": {"region": "x"}, "nowhere": {}, "eu-west-1": [1]}, "extra": 1},
                        "f.yaml")
    paths = {p for p, _ in err.value.problems}
    assert paths == {"extra", "regions.us-east-2.region", "regions.nowhere", "regions.eu-west-1"}


def test_stamped_overrides_apply_per_region() -> None:
    config, _ = template("aws-prod")
    overrides = load_overrides(DATA / "aws-prod.regions.yaml")
    stamped = derive_all("aws-prod", config, ["us-east-2", "eu-central-1"], overrides)
    east, central = stamped
    assert east.settings.network.vpc_cidr == "10.41.0.0/16"
    assert central.settings.network.vpc_cidr == "10.42.0.0/16"
    assert [p.instance_type for p in central.settings.node_pools] == ["g6e.12xlarge", "p5.4xlarge"]
    assert [p.instance_type for p in east.settings.node_pools] == ["g6e.12xlarge", "p5.48xlarge"]


@pytest.mark.parametrize(("region", "geo"), [("us-east-1", "us"), ("us-gov-west-1", "us-gov"), ("eu-central-2", "eu"),
                                             ("ap-southeast-4", "ap")])
def test_geography(region: str, geo: str) -> None:
    assert geography(region) == geo


def test_zone_scoped_fields_must_be_given_per_region() -> None:
    """Zones, reservations and placement groups exist in one region: kept, they are refused, each named."""
    config, settings = template("aws-prod")
    with pytest.raises(SettingsError) as err:
        derive("aws-prod", config, settings, "us-east-2")
    reasons = dict(err.value.problems)
    assert "us-east-1a, us-east-1b, us-east-1c" in reasons["overrides: regions.us-east-2.network.availabilityZones"]
    pools = reasons["overrides: regions.us-east-2.nodePools"]
    for kept in ("availabilityZone us-east-1a", "capacityReservation cr-0a1b2c3d4e5f60718",
                 "placement.groupName ck8s-prod-us-east-1-h100"):
        assert kept in pools
    s = derive("aws-prod", config, settings, "us-east-2", zoned("us-east-2"))
    [h100] = [p for p in s.settings.node_pools if p.name == "h100"]
    assert h100.availability_zone == "us-east-2a" and h100.capacity_reservation is None
