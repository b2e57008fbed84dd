"""The secrets nodes read at boot from AWS Secrets Manager (never from user-data).

- join auth token: a random token the bootstrap control plane registers with k8sd
  (`k8s x-capi set-auth-token`); joining control planes present it to k8sd's
  `x/capi/generate-join-token` to mint their own single-use join token. Control planes only: it
  can mint control-plane tokens (workers get theirs through components/aws/mint.py).
- CA material: the `ca-crt`/`ca-key`/`client-ca-crt`/`client-ca-key` entries of the bootstrap
  config, as a YAML fragment the first control plane appends to the part from its user-data.
  Control planes only.
Names are generated (random suffix) so a rebuilt stack never trips over a secret still in its
deletion recovery window.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_random as random
import yaml

from ..settings.model import Settings
from ..tables import tokens
from .protection import state_opts

AUTH_TOKEN_LENGTH = 48
RECOVERY_WINDOW_DAYS = 7


def pki_secret_document(ca_cert_pem: str, ca_key_pem: str, client_ca_cert_pem: str, client_ca_key_pem: str) -> str:
    """YAML appended to the bootstrap config on the first control plane (top-level keys only). The
    certificates are not secret, but here they keep ~2.5 KB out of EC2's 16 KiB user-data."""
    return yaml.safe_dump({"ca-crt": ca_cert_pem, "ca-key": ca_key_pem, "client-ca-crt": client_ca_cert_pem,
                           "client-ca-key": client_ca_key_pem}, sort_keys=True)


class ClusterSecrets(pulumi.ComponentResource):
    """Outputs: `auth_secret_arn`, `pki_secret_arn` and `auth_token` (a Pulumi secret).
    `ca` and `client_ca` are (certificate PEM, key PEM) pairs."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        ca: tuple[pulumi.Input[str], pulumi.Input[str]],
        client_ca: tuple[pulumi.Input[str], pulumi.Input[str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(tokens.CLUSTER_SECRETS, name, None, opts)
        cluster = settings.cluster_name
        keep = state_opts(settings, pulumi.ResourceOptions(parent=self))
        token = random.RandomPassword(f"{name}-join-auth", length=AUTH_TOKEN_LENGTH, special=False, opts=keep)
        self.auth_token: pulumi.Output[str] = pulumi.Output.secret(token.result)

        def secret(suffix: str, description: str, value: pulumi.Output[str]) -> aws.secretsmanager.Secret:
            holder = aws.secretsmanager.Secret(
                f"{name}-{suffix}",
                description=f"ck8s-gpu {cluster}: {description}",
                recovery_window_in_days=RECOVERY_WINDOW_DAYS,
                opts=keep,
            )
            aws.secretsmanager.SecretVersion(
                f"{name}-{suffix}", secret_id=holder.id, secret_string=pulumi.Output.secret(value), opts=keep
            )
            return holder

        auth = secret(
            "join-auth", "k8sd CAPI join auth token (control planes mint their own join tokens)", self.auth_token
        )
        pki = secret(
            "ca-keys",
            "cluster CA keys for the first control plane's bootstrap",
            pulumi.Output.all(*ca, *client_ca).apply(lambda v: pki_secret_document(v[0], v[1], v[2], v[3])),
        )
        self.auth_secret_arn: pulumi.Output[str] = auth.arn
        self.pki_secret_arn: pulumi.Output[str] = pki.arn
        self.register_outputs({"authSecretArn": auth.arn, "pkiSecretArn": pki.arn})
