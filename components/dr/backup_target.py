"""BackupTarget: the encrypted, versioned S3 bucket in ANOTHER region that Velero backs up to, its
KMS key, and the least-privilege IAM user Velero writes with (a thin shell over dr/policies.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from ..addons.velero_values import credentials_file, credentials_values
from ..aws.tags import default_tags
from ..settings.model import Settings
from ..tables import tokens
from ..tables.backup_names import bucket_name, key_alias, user_name
from .policies import bucket_policy, noncurrent_days, velero_policy

# The longest window AWS allows: a key scheduled for deletion by mistake can be rescued for 30 days
# (every backup is unreadable without it).
KEY_DELETION_WINDOW_DAYS = 30
ABORT_INCOMPLETE_UPLOAD_DAYS = 7


class BackupTarget(pulumi.ComponentResource):
    """Attributes: `bucket_name`, `region`, `credentials` (a secret: the AWS credentials file for
    Velero's chart value credentials.secretContents.cloud), `ready` (what the Velero release waits
    for) and `velero_values()` (its share of that release's values).

    `source_ips`: the cluster's NAT egress addresses; when given, the Velero user's S3 grants
    only work from them (a leaked key is useless elsewhere)."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        opts: pulumi.ResourceOptions | None = None,
        *,
        source_ips: pulumi.Input[Sequence[str]] | None = None,
    ) -> None:
        super().__init__(tokens.BACKUP_TARGET, name, None, opts)
        backup = settings.backup
        if backup is None or backup.region is None or backup.region == settings.region:
            raise ValueError("BackupTarget needs settings.backup.region, another region than the cluster's")
        cluster = settings.cluster_name
        provider = aws.Provider(
            f"{name}-aws",  # stable name: a new backup region is a provider diff, not a new provider
            region=backup.region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=default_tags(settings)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        # What a rebuild must not lose: the backups, the key that decrypts them, versioning.
        keep = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
            protect=settings.protection.protect, retain_on_delete=settings.protection.retain_on_delete))

        self.key = aws.kms.Key(
            f"{name}-key",
            description=f"Velero backups of {cluster}",
            enable_key_rotation=True,
            deletion_window_in_days=KEY_DELETION_WINDOW_DAYS,
            opts=keep,
        )
        alias = aws.kms.Alias(f"{name}-key-alias", name=key_alias(cluster), target_key_id=self.key.key_id, opts=child)
        self.bucket = aws.s3.Bucket(f"{name}-bucket", bucket=bucket_name(cluster), force_destroy=False, opts=keep)
        ownership = aws.s3.BucketOwnershipControls(
            f"{name}-ownership",
            bucket=self.bucket.id,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
            opts=child,
        )
        public = aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access",
            bucket=self.bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        versioning = aws.s3.BucketVersioning(
            f"{name}-versioning",
            bucket=self.bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
            opts=keep,
        )
        encryption = aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption",
            bucket=self.bucket.id,
            rules=[aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=aws.s3.
                BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                    sse_algorithm="aws:kms", kms_master_key_id=self.key.arn),
                bucket_key_enabled=True,  # one KMS call per object batch, not per object
            )],
            opts=child,
        )
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-lifecycle",
            bucket=self.bucket.id,
            rules=[aws.s3.BucketLifecycleConfigurationRuleArgs(
                id="expire-old-versions",
                status="Enabled",
                filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                    noncurrent_days=noncurrent_days(backup.ttl_hours)),
                abort_incomplete_multipart_upload=aws.s3.
                BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                    days_after_initiation=ABORT_INCOMPLETE_UPLOAD_DAYS),
            )],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[versioning])),
        )
        aws.s3.BucketPolicy(
            f"{name}-policy",
            bucket=self.bucket.id,
            policy=self.bucket.arn.apply(lambda arn: json.dumps(bucket_policy(arn), sort_keys=True)),
            # A bucket policy PUT is refused while the public-access block is being written.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[public, ownership])),
        )

        user = aws.iam.User(f"{name}-user", name=user_name(cluster), path="/ck8s-gpu/", opts=child)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self, provider=provider))
        ips = pulumi.Output.from_input(source_ips if source_ips is not None else [])
        grant = aws.iam.UserPolicy(
            f"{name}-user-policy",
            user=user.name,
            policy=pulumi.Output.all(partition.partition, self.bucket.arn, self.key.arn, ips).apply(
                lambda a: json.dumps(velero_policy(partition=a[0], bucket_arn=a[1], key_arn=a[2],
                                                   restore_from=backup.restore_from, source_ips=list(a[3] or [])),
                                     sort_keys=True)),
            opts=child,
        )
        access_key = aws.iam.AccessKey(
            f"{name}-user-key", user=user.name,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(additional_secret_outputs=["secret"])),
        )
        self.credentials: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(access_key.id, access_key.secret).apply(lambda k: credentials_file(k[0], k[1]))
        )
        # Velero must not start before its bucket is encrypted and its key may write to it.
        self.ready: list[pulumi.Resource] = [encryption, grant, versioning, alias]
        self.bucket_name: pulumi.Output[str] = self.bucket.bucket
        self.region = backup.region
        self.register_outputs({
            "bucket": self.bucket.bucket,
            "bucketArn": self.bucket.arn,
            "keyArn": self.key.arn,
            "region": backup.region,
            "credentials": self.credentials,
        })

    def velero_values(self) -> pulumi.Output[dict[str, Any]]:
        """What this target adds to the `velero` release's values (the add-on computes the rest
        from the same settings, components/addons/velero_values.py): the credentials file, as a
        secret Output. Hand it to AddonSet(extra_values={"velero": ...}) with `ready`."""
        return pulumi.Output.secret(self.credentials.apply(credentials_values))
