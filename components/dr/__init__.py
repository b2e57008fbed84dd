"""Disaster recovery beyond the Velero add-on: the off-region backup target (bucket, key, IAM) and
THE Velero values that point at it. Policies and values are pure; BackupTarget is a thin shell."""
