"""AWS prices besides EC2 instances, per Region, each with its source: the AWS pricing page the number
belongs to, the page it was read from (AWS's pricing pages fill their tables in the browser, so their
stored copies carry no number: where a third party quoted AWS's page, that page is named), the words
read there, and the date. Written by hand; a Region or a price missing here has no price in the
table, and `ck8s-gpu plan --cost` says so instead of guessing. EC2 instance prices are in
components/tables/ec2_prices.py (generated from the pinned Karpenter provider).

USD, excluding taxes. What is left out on purpose (traffic-dependent, or not created by the cluster
program) is listed in docs/cost.md.
"""

from __future__ import annotations

from dataclasses import dataclass

# A month of the pricing examples and of AWS's Pricing Calculator: 24 h x 365 d / 12.
HOURS_PER_MONTH = 730
# AWS's weekly image builds in a 730-hour month: 730 / (7 x 24).
WEEKS_PER_MONTH = HOURS_PER_MONTH / (7 * 24)
READ_ON = "2026-12-06"  # when the pages below were read


@dataclass(frozen=True)
class Source:
    aws_page: str  # AWS's page for the price or fact
    read_from: str  # where the words below were read (the AWS page itself, or a page quoting it)
    quote: str  # what it says, shortened
    read_on: str = READ_ON
    note: str = ""


@dataclass(frozen=True)
class Price:
    usd: float
    unit: str
    source: Source


NAT_GATEWAY_HOUR = "nat-gateway-hour"
NAT_GATEWAY_GB = "nat-gateway-gb"
NLB_HOUR = "nlb-hour"
PUBLIC_IPV4_HOUR = "public-ipv4-hour"
EBS_GP3_GB_MONTH = "ebs-gp3-gb-month"
EBS_SNAPSHOT_GB_MONTH = "ebs-snapshot-gb-month"
VPC_ENDPOINT_AZ_HOUR = "vpc-endpoint-az-hour"

_VPC = "https://aws.amazon.com/vpc/pricing/"
_NAT = Source(_VPC, "https://rajesh.medampudi.com/blog/aws-nat-gateway-hidden-tax",
              "In us-east-1 (N. Virginia) and us-east-2 (Ohio) this is $0.045 per NAT Gateway-hour ... $0.045 per "
              "GB processed through the gateway")

PRICES: dict[str, dict[str, Price]] = {
    "us-east-1": {
        NAT_GATEWAY_HOUR: Price(0.045, "per NAT gateway-hour", _NAT),
        NAT_GATEWAY_GB: Price(0.045, "per GB processed by a NAT gateway", _NAT),
        NLB_HOUR: Price(0.0225, "per Network Load Balancer-hour", Source(
            "https://aws.amazon.com/elasticloadbalancing/pricing/",
            "https://clustercost.com/blog/network-load-balancer-pricing-2025",
            "The Base Hourly Rate (US-East-1) ... NLB: $0.0225 per hour")),
        PUBLIC_IPV4_HOUR: Price(0.005, "per public IPv4 address-hour", Source(
            _VPC, "https://www.haufe-akademie.de/en/skill-it/blog/aws-gebuehren-ipv4-adressen",
            "a fee of 0.005 US dollars per hour and IP for all public IPv4 addresses from February 1, 2024 ... "
            "All AWS regions are affected")),
        EBS_GP3_GB_MONTH: Price(0.08, "per GB-month of provisioned gp3 storage", Source(
            "https://aws.amazon.com/ebs/pricing/",
            "https://www.saisci.com/aws/gp2-vs-gp3-cost-comparison-ebs-volumes/",
            "Based on the Amazon EBS Pricing page ... gp3 Storage Pricing $0.08/GB-month; 3,000 IOPS free ... "
            "125 MB/s free ... Pricing below is based on N. Virginia Region",
            note="the page was last updated 2021-02-04; this project's volumes use the included 3,000 IOPS "
                 "and 125 MB/s (components/aws/hardening.py sets no more)")),
        EBS_SNAPSHOT_GB_MONTH: Price(0.05, "per GB-month of standard-tier snapshot data", Source(
            "https://aws.amazon.com/ebs/pricing/",
            "https://docs.aws.amazon.com/ebs/latest/userguide/snapshot-archive-pricing.html",
            "After the snapshot is restored to the standard tier, the snapshot is billed at the standard rate "
            "for snapshots of $0.05 per GB-month",
            note="the EBS User Guide names no Region for it: listed for us-east-1 only")),
        VPC_ENDPOINT_AZ_HOUR: Price(0.01, "per interface VPC endpoint per Availability Zone-hour", Source(
            "https://aws.amazon.com/privatelink/pricing/",
            "https://awsnegotiations.com/privatelink-cost-analysis.html",
            "Interface Endpoint hourly $0.01 / hour per AZ ... Each AZ enabled per endpoint ... NLB on PrivateLink "
            "service side $0.0225 / hour + LCU",
            note="the page (updated May 2026) names no Region; the NLB rate beside it is us-east-1's (above): "
                 "listed for us-east-1 only. Each partial endpoint-hour is billed as a full hour (AWS's page)")),
    },
}

# Facts about how AWS bills, with their sources (no number of their own).
CAPACITY_RESERVATION_BILLING = Source(
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-pricing-billing.html",
    "https://docs---aws.amazon.com.rproxy.govskope.ca/en_us/AWSEC2/latest/UserGuide/capacity-reservations-pricing-billing.html",
    "Capacity Reservations are charged at the equivalent On-Demand rate whether you run instances in reserved "
    "capacity or not. If you do not use the reservation, this shows up as unused reservation on your Amazon EC2 "
    "bill.")
CAPACITY_BLOCK_BILLING = Source(
    "https://aws.amazon.com/ec2/capacityblocks/pricing/",
    "http://sibshop.uat.jiralog.com/ec2/capacityblocks/pricing",
    "The reservation fee is charged up front at the time you schedule the reservation. Reservation prices are "
    "updated regularly based on trends in supply and demand",
    note="a copy of AWS's page; its table was for prices until 2025-01-01, so none of its numbers is used")
SPOT_BILLING = Source(
    "https://aws.amazon.com/ec2/spot/pricing/",
    "http://elcssyosw.uat.app2one.com/ec2/spot/pricing",
    "Spot Instance prices are set by Amazon EC2 and adjust gradually based on long-term trends in supply and "
    "demand for Spot Instance capacity",
    note="a copy of AWS's page")
IMAGE_BUILDER_BILLING = Source(
    "https://aws.amazon.com/image-builder/pricing/",
    "https://awsnegotiations.com/ec2-image-builder-pricing.html",
    "EC2 Image Builder itself has no charge. What you pay is everything it touches: the EC2 instances that "
    "perform the build ... the snapshot storage for each AMI version retained")


def price(region: str | None, key: str) -> Price | None:
    """The table's price of `key` in `region`, or None: no price in the table."""
    return PRICES.get(region or "", {}).get(key)
