"""A throwaway CA and one certificate it signs, for controllers the scenarios run on loopback
(KubeRay's webhook server, KEDA's gRPC link and metrics adapter): what a chart's Secret would hold."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path


def issue(cert_dir: Path, common_name: str, *, dns: Sequence[str] = (), ips: Sequence[str] = (),
          client_auth: bool = False, write_ca: bool = False) -> bytes:
    """A CA valid for a day and a leaf for `dns` and `ips` signed by it (server use, and client use
    with `client_auth`), written as tls.crt / tls.key (and ca.crt with `write_ca`) in `cert_dir`;
    returns the CA's PEM for a caBundle."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    life = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name(f"ck8s-gpu test CA for {common_name}"))
          .issuer_name(name(f"ck8s-gpu test CA for {common_name}"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(life[0]).not_valid_after(life[1])
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    alt: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    alt += [x509.DNSName(d) for d in dns]
    usages = [ExtendedKeyUsageOID.SERVER_AUTH, *([ExtendedKeyUsageOID.CLIENT_AUTH] if client_auth else [])]
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(name(common_name)).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(life[0]).not_valid_after(life[1])
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    cert_dir.mkdir(parents=True, exist_ok=True)
    if write_ca:
        (cert_dir / "ca.crt").write_bytes(ca_pem)
    (cert_dir / "tls.crt").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (cert_dir / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    return ca_pem
