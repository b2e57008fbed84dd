"""EC2 On-Demand prices (USD per hour, Linux, shared tenancy) per Region: the static table of the
Karpenter AWS provider this project pins (github.com/aws/karpenter-provider-aws v1.15.0,
pkg/providers/pricing/zz_generated.pricing_aws.go,
"generated at 2026-07-20T13:44:30Z"), for the types this project can launch: the GPU table
(components/tables/instance_types.py), the committed stacks' control planes, the image program's
build instances and the m6i/m7i/m7a/m7g/m8i sizes large to 4xlarge. Karpenter ships this table for
us-east-1 only (it asks the Pricing API at run time elsewhere): a Region missing here has no price in
the table, and `ck8s-gpu plan --cost` says so. Generated, never edited: tests/unit/test_ec2_prices.py
regenerates it from the Go module cache with UPDATE_GOLDEN=1 and fails while it differs.
"""

from __future__ import annotations

SOURCE_MODULE = "github.com/aws/karpenter-provider-aws"
SOURCE_VERSION = "v1.15.0"
SOURCE_FILE = "pkg/providers/pricing/zz_generated.pricing_aws.go"
GENERATED_AT = "2026-07-20T13:44:30Z"

ON_DEMAND: dict[str, dict[str, float]] = {
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
        "m6i.2xlarge": 0.384,
        "m6i.4xlarge": 0.768,
        "m6i.large": 0.096,
        "m6i.xlarge": 0.192,
        "m7a.2xlarge": 0.46368,
        "m7a.4xlarge": 0.92736,
        "m7a.large": 0.11592,
        "m7a.xlarge": 0.23184,
        "m7g.2xlarge": 0.3264,
        "m7g.4xlarge": 0.6528,
        "m7g.large": 0.0816,
        "m7g.xlarge": 0.1632,
        "m7i.2xlarge": 0.4032,
        "m7i.4xlarge": 0.8064,
        "m7i.large": 0.1008,
        "m7i.xlarge": 0.2016,
        "m8i.2xlarge": 0.42336,
        "m8i.4xlarge": 0.84672,
        "m8i.large": 0.10584,
        "m8i.xlarge": 0.21168,
        "p4d.24xlarge": 21.957642,
        "p4de.24xlarge": 27.44705,
        "p5.48xlarge": 55.04,
        "p5.4xlarge": 6.88,
        "p5en.48xlarge": 63.296,
        "p6-b200.48xlarge": 113.9328,
    },
}
