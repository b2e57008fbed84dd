"""The cluster's certificate authorities and the admin client certificate, made in Pulumi state.

Generating them here (not on the first control plane) means the kubeconfig is known without
reading anything back from a node, and a rebuilt cluster keeps the same CA, so every client keeps
trusting it. k8sd only loads RSA keys (k8sd pkg/utils/pki/load.go), hence RSA. k8sd signs
kubelet/server certificates with `ca` and client certificates (its own admin, apiserver-kubelet)
with `client-ca`; the API server trusts client certificates of `client-ca` only.

Under the mock engine provider-declared secret outputs are not marked secret, and a real engine
marks them only on the resource itself; every key leaving this component is therefore wrapped in
`Output.secret` explicitly.
"""

from __future__ import annotations

import pulumi
import pulumi_tls as tls

from ..settings.model import Settings
from ..tables import tokens
from .protection import state_opts

CA_VALIDITY_HOURS = 10 * 365 * 24
ADMIN_VALIDITY_HOURS = 365 * 24
# `pulumi up` inside this window re-issues the admin certificate; the Kubernetes provider's
# cluster_identifier keeps that from replacing every Kubernetes resource.
ADMIN_EARLY_RENEWAL_HOURS = 30 * 24
CA_USES = ["cert_signing", "crl_signing", "digital_signature", "key_encipherment"]
# Same subject as k8sd's own admin certificate: bypasses RBAC, needs no binding before first use.
ADMIN_GROUP = "system:masters"


class ClusterPki(pulumi.ComponentResource):
    """Outputs: `ca_cert_pem`, `client_ca_cert_pem`, `admin_cert_pem` (public) and `ca_key_pem`,
    `client_ca_key_pem`, `admin_key_pem` (secrets)."""

    def __init__(self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(tokens.CLUSTER_PKI, name, None, opts)
        cluster = settings.cluster_name
        keep = state_opts(settings, pulumi.ResourceOptions(parent=self))
        child = pulumi.ResourceOptions(parent=self)

        def authority(suffix: str, common_name: str) -> tuple[tls.PrivateKey, tls.SelfSignedCert]:
            key = tls.PrivateKey(f"{name}-{suffix}-key", algorithm="RSA", rsa_bits=2048, opts=keep)
            cert = tls.SelfSignedCert(
                f"{name}-{suffix}",
                private_key_pem=pulumi.Output.secret(key.private_key_pem),
                subject=tls.SelfSignedCertSubjectArgs(common_name=common_name, organization=cluster),
                is_ca_certificate=True,
                validity_period_hours=CA_VALIDITY_HOURS,
                allowed_uses=CA_USES,
                opts=keep,
            )
            return key, cert

        ca_key, ca = authority("ca", "kubernetes-ca")
        client_ca_key, client_ca = authority("client-ca", "kubernetes-ca-client")

        admin_key = tls.PrivateKey(f"{name}-admin-key", algorithm="RSA", rsa_bits=2048, opts=child)
        request = tls.CertRequest(
            f"{name}-admin",
            private_key_pem=pulumi.Output.secret(admin_key.private_key_pem),
            subject=tls.CertRequestSubjectArgs(common_name=f"{cluster}-admin", organization=ADMIN_GROUP),
            opts=child,
        )
        admin = tls.LocallySignedCert(
            f"{name}-admin",
            cert_request_pem=request.cert_request_pem,
            ca_cert_pem=client_ca.cert_pem,
            ca_private_key_pem=pulumi.Output.secret(client_ca_key.private_key_pem),
            validity_period_hours=ADMIN_VALIDITY_HOURS,
            early_renewal_hours=ADMIN_EARLY_RENEWAL_HOURS,
            allowed_uses=["client_auth", "digital_signature", "key_encipherment"],
            opts=child,
        )

        self.ca_cert_pem: pulumi.Output[str] = ca.cert_pem
        self.client_ca_cert_pem: pulumi.Output[str] = client_ca.cert_pem
        self.admin_cert_pem: pulumi.Output[str] = admin.cert_pem
        self.ca_key_pem: pulumi.Output[str] = pulumi.Output.secret(ca_key.private_key_pem)
        self.client_ca_key_pem: pulumi.Output[str] = pulumi.Output.secret(client_ca_key.private_key_pem)
        self.admin_key_pem: pulumi.Output[str] = pulumi.Output.secret(admin_key.private_key_pem)
        self.register_outputs({"caCertPem": self.ca_cert_pem, "clientCaCertPem": self.client_ca_cert_pem})
