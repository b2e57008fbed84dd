"""EC2 On-Demand prices (USD per hour, Linux, shared tenancy) outside us-east-1, for the GPU families
g4dn, g5, g6 and g6e, copied by hand (the numbers only) from a dated, public extract of AWS's own
price list:

- repository github.com/giantswarm/cluster-manager, file internal/compose/prices_table.go at commit
  435775f02cf9e366ea7f4f037f23d25c0c5b872c, `PriceAsOf = "2026-09-17"`;
- generated there by hack/aws-on-demand-prices.py (same commit) from AWS's published price list,
  one file per location: https://b0.p.awsstatic.com/pricing/2.0/meteredUnitMaps/ec2/USD/current/
  ec2-ondemand-without-sec-sel/<location>/Linux/index.json, every size of the four families the
  list has for the location, the figure as AWS prints it with trailing zeros dropped;
- its header: "A size AWS does not offer in a region has no row", and its test
  (internal/compose/prices_test.go): "AWS lists no on-demand g6.xlarge in EU (Ireland) (eu-west-1)".

Every row of that file is here (all its types are in components/tables/instance_types.py): 31 in
eu-central-1, eu-north-1, us-east-1 and us-west-2, 23 in eu-west-2, 15 in eu-west-1, 7 in
ap-southeast-1. NOT_LISTED holds the sizes of the four families that the extract lists for
us-east-1 but not for a region: AWS's price list of that date had no On-Demand price for them there.
Any other type (m7i, p5, ...) or Region has no price here: nothing is guessed.

components/plan/cost.py prices us-east-1 from components/tables/ec2_prices.py (the pinned Karpenter
table) and every other Region from this one; tests/unit/test_ec2_regional_prices.py holds this
table's us-east-1 rows equal to Karpenter's, row for row: the evidence the extract is faithful.
"""

from __future__ import annotations

SOURCE_REPOSITORY = "github.com/giantswarm/cluster-manager"
SOURCE_FILE = "internal/compose/prices_table.go"
SOURCE_COMMIT = "435775f02cf9e366ea7f4f037f23d25c0c5b872c"
PRICE_AS_OF = "2026-09-17"
AWS_PRICE_LIST = ("https://b0.p.awsstatic.com/pricing/2.0/meteredUnitMaps/ec2/USD/current/"
                  "ec2-ondemand-without-sec-sel/<location>/Linux/index.json")
FAMILIES = ("g4dn", "g5", "g6", "g6e")

# AWS's price list files each Region under its location name.
LOCATIONS: dict[str, str] = {
    "eu-central-1": "EU (Frankfurt)",
    "eu-west-1": "EU (Ireland)",
    "eu-west-2": "EU (London)",
    "eu-north-1": "EU (Stockholm)",
    "us-east-1": "US East (N. Virginia)",
    "us-west-2": "US West (Oregon)",
    "ap-southeast-1": "Asia Pacific (Singapore)",
}

# USD per hour, per Region and instance type.
ON_DEMAND: dict[str, dict[str, float]] = {
    "eu-central-1": {
        "g4dn.12xlarge": 4.89,
        "g4dn.16xlarge": 5.44,
        "g4dn.2xlarge": 0.94,
        "g4dn.4xlarge": 1.505,
        "g4dn.8xlarge": 2.72,
        "g4dn.metal": 9.78,
        "g4dn.xlarge": 0.658,
        "g5.12xlarge": 7.09282,
        "g5.16xlarge": 5.12204,
        "g5.24xlarge": 10.18405,
        "g5.2xlarge": 1.5156,
        "g5.48xlarge": 20.3681,
        "g5.4xlarge": 2.03081,
        "g5.8xlarge": 3.06122,
        "g5.xlarge": 1.258,
        "g6.12xlarge": 5.75429,
        "g6.16xlarge": 4.24769,
        "g6.24xlarge": 8.34732,
        "g6.2xlarge": 1.22249,
        "g6.48xlarge": 16.69464,
        "g6.4xlarge": 1.65466,
        "g6.8xlarge": 2.519,
        "g6.xlarge": 1.0064,
        "g6e.12xlarge": 13.12002,
        "g6e.16xlarge": 9.47454,
        "g6e.24xlarge": 18.83806,
        "g6e.2xlarge": 2.8035,
        "g6e.48xlarge": 37.67612,
        "g6e.4xlarge": 3.75651,
        "g6e.8xlarge": 5.66252,
        "g6e.xlarge": 2.327,
    },
    "eu-west-1": {
        "g4dn.12xlarge": 4.362,
        "g4dn.16xlarge": 4.853,
        "g4dn.2xlarge": 0.838,
        "g4dn.4xlarge": 1.342,
        "g4dn.8xlarge": 2.426,
        "g4dn.metal": 8.724,
        "g4dn.xlarge": 0.587,
        "g5.12xlarge": 6.33167,
        "g5.16xlarge": 4.57237,
        "g5.24xlarge": 9.09117,
        "g5.2xlarge": 1.35296,
        "g5.48xlarge": 18.18233,
        "g5.4xlarge": 1.81287,
        "g5.8xlarge": 2.73271,
        "g5.xlarge": 1.123,
    },
    "eu-west-2": {
        "g4dn.12xlarge": 4.577,
        "g4dn.16xlarge": 5.092,
        "g4dn.2xlarge": 0.88,
        "g4dn.4xlarge": 1.409,
        "g4dn.8xlarge": 2.546,
        "g4dn.metal": 9.154,
        "g4dn.xlarge": 0.615,
        "g5.12xlarge": 7.19994,
        "g5.16xlarge": 5.1994,
        "g5.24xlarge": 10.33786,
        "g5.2xlarge": 1.53849,
        "g5.48xlarge": 20.67572,
        "g5.4xlarge": 2.06148,
        "g5.8xlarge": 3.10745,
        "g5.xlarge": 1.277,
        "g6.12xlarge": 5.8412,
        "g6.16xlarge": 4.31184,
        "g6.24xlarge": 8.47339,
        "g6.2xlarge": 1.24095,
        "g6.48xlarge": 16.94678,
        "g6.4xlarge": 1.67965,
        "g6.8xlarge": 2.55705,
        "g6.xlarge": 1.0216,
    },
    "eu-north-1": {
        "g4dn.12xlarge": 4.15,
        "g4dn.16xlarge": 4.617,
        "g4dn.2xlarge": 0.798,
        "g4dn.4xlarge": 1.277,
        "g4dn.8xlarge": 2.308,
        "g4dn.metal": 8.3,
        "g4dn.xlarge": 0.558,
        "g5.12xlarge": 6.01593,
        "g5.16xlarge": 4.34437,
        "g5.24xlarge": 8.63782,
        "g5.2xlarge": 1.28549,
        "g5.48xlarge": 17.27564,
        "g5.4xlarge": 1.72247,
        "g5.8xlarge": 2.59644,
        "g5.xlarge": 1.067,
        "g6.12xlarge": 4.88062,
        "g6.16xlarge": 3.60277,
        "g6.24xlarge": 7.07996,
        "g6.2xlarge": 1.03688,
        "g6.48xlarge": 14.15992,
        "g6.4xlarge": 1.40343,
        "g6.8xlarge": 2.13655,
        "g6.xlarge": 0.8536,
        "g6e.12xlarge": 11.12975,
        "g6e.16xlarge": 8.03728,
        "g6e.24xlarge": 15.98037,
        "g6e.2xlarge": 2.37822,
        "g6e.48xlarge": 31.96075,
        "g6e.4xlarge": 3.18666,
        "g6e.8xlarge": 4.80353,
        "g6e.xlarge": 1.974,
    },
    "us-east-1": {
        "g4dn.12xlarge": 3.912,
        "g4dn.16xlarge": 4.352,
        "g4dn.2xlarge": 0.752,
        "g4dn.4xlarge": 1.204,
        "g4dn.8xlarge": 2.176,
        "g4dn.metal": 7.824,
        "g4dn.xlarge": 0.526,
        "g5.12xlarge": 5.672,
        "g5.16xlarge": 4.096,
        "g5.24xlarge": 8.144,
        "g5.2xlarge": 1.212,
        "g5.48xlarge": 16.288,
        "g5.4xlarge": 1.624,
        "g5.8xlarge": 2.448,
        "g5.xlarge": 1.006,
        "g6.12xlarge": 4.6016,
        "g6.16xlarge": 3.3968,
        "g6.24xlarge": 6.6752,
        "g6.2xlarge": 0.9776,
        "g6.48xlarge": 13.3504,
        "g6.4xlarge": 1.3232,
        "g6.8xlarge": 2.0144,
        "g6.xlarge": 0.8048,
        "g6e.12xlarge": 10.49264,
        "g6e.16xlarge": 7.57719,
        "g6e.24xlarge": 15.06559,
        "g6e.2xlarge": 2.24208,
        "g6e.48xlarge": 30.13118,
        "g6e.4xlarge": 3.00424,
        "g6e.8xlarge": 4.52856,
        "g6e.xlarge": 1.861,
    },
    "us-west-2": {
        "g4dn.12xlarge": 3.912,
        "g4dn.16xlarge": 4.352,
        "g4dn.2xlarge": 0.752,
        "g4dn.4xlarge": 1.204,
        "g4dn.8xlarge": 2.176,
        "g4dn.metal": 7.824,
        "g4dn.xlarge": 0.526,
        "g5.12xlarge": 5.672,
        "g5.16xlarge": 4.096,
        "g5.24xlarge": 8.144,
        "g5.2xlarge": 1.212,
        "g5.48xlarge": 16.288,
        "g5.4xlarge": 1.624,
        "g5.8xlarge": 2.448,
        "g5.xlarge": 1.006,
        "g6.12xlarge": 4.6016,
        "g6.16xlarge": 3.3968,
        "g6.24xlarge": 6.6752,
        "g6.2xlarge": 0.9776,
        "g6.48xlarge": 13.3504,
        "g6.4xlarge": 1.3232,
        "g6.8xlarge": 2.0144,
        "g6.xlarge": 0.8048,
        "g6e.12xlarge": 10.49264,
        "g6e.16xlarge": 7.57719,
        "g6e.24xlarge": 15.06559,
        "g6e.2xlarge": 2.24208,
        "g6e.48xlarge": 30.13118,
        "g6e.4xlarge": 3.00424,
        "g6e.8xlarge": 4.52856,
        "g6e.xlarge": 1.861,
    },
    "ap-southeast-1": {
        "g4dn.12xlarge": 5.474,
        "g4dn.16xlarge": 6.089,
        "g4dn.2xlarge": 1.052,
        "g4dn.4xlarge": 1.685,
        "g4dn.8xlarge": 3.045,
        "g4dn.metal": 10.948,
        "g4dn.xlarge": 0.736,
    },
}

# Sizes of FAMILIES with no row for the Region: no On-Demand price in AWS's price list of PRICE_AS_OF.
NOT_LISTED: dict[str, tuple[str, ...]] = {
    "eu-west-1": (
        "g6.12xlarge",
        "g6.16xlarge",
        "g6.24xlarge",
        "g6.2xlarge",
        "g6.48xlarge",
        "g6.4xlarge",
        "g6.8xlarge",
        "g6.xlarge",
        "g6e.12xlarge",
        "g6e.16xlarge",
        "g6e.24xlarge",
        "g6e.2xlarge",
        "g6e.48xlarge",
        "g6e.4xlarge",
        "g6e.8xlarge",
        "g6e.xlarge",
    ),
    "eu-west-2": (
        "g6e.12xlarge",
        "g6e.16xlarge",
        "g6e.24xlarge",
        "g6e.2xlarge",
        "g6e.48xlarge",
        "g6e.4xlarge",
        "g6e.8xlarge",
        "g6e.xlarge",
    ),
    "ap-southeast-1": (
        "g5.12xlarge",
        "g5.16xlarge",
        "g5.24xlarge",
        "g5.2xlarge",
        "g5.48xlarge",
        "g5.4xlarge",
        "g5.8xlarge",
        "g5.xlarge",
        "g6.12xlarge",
        "g6.16xlarge",
        "g6.24xlarge",
        "g6.2xlarge",
        "g6.48xlarge",
        "g6.4xlarge",
        "g6.8xlarge",
        "g6.xlarge",
        "g6e.12xlarge",
        "g6e.16xlarge",
        "g6e.24xlarge",
        "g6e.2xlarge",
        "g6e.48xlarge",
        "g6e.4xlarge",
        "g6e.8xlarge",
        "g6e.xlarge",
    ),
}


def unlisted_in(instance_type: str, region: str) -> bool:
    """AWS's price list of PRICE_AS_OF has no On-Demand price for `instance_type` in `region`, though
    the extract covers the Region and the type's family: the Region does not offer it."""
    return instance_type in NOT_LISTED.get(region, ())


def listed_regions(instance_type: str) -> tuple[str, ...]:
    """The Regions of this table whose price list has `instance_type`, sorted."""
    return tuple(sorted(r for r, rows in ON_DEMAND.items() if instance_type in rows))
