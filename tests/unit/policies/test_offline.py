"""The offline adapter over a real mock-engine recording: inputs, secret paths, dependencies and
stack outputs reach the policies the way the engine would hand them over."""

import base64

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_tls as tls

from components.plan.mockengine import run_program
from components.policies.offline import evaluate, from_records
from tests.unit.policies.helpers import facts

KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: c2VjcmV0LXRva2VuLXZhbHVl\n"
KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----\n"


def program() -> None:
    aws.ec2.SecurityGroup("web", ingress=[aws.ec2.SecurityGroupIngressArgs(
        protocol="tcp", from_port=443, to_port=443, cidr_blocks=["0.0.0.0/0"])])
    k8s.Provider("leaky", kubeconfig=KUBECONFIG)
    k8s.Provider("careful", kubeconfig=pulumi.Output.secret(KUBECONFIG))
    aws.ec2.LaunchTemplate(
        "nodes",
        user_data=base64.b64encode(f"#cloud-config\nwrite_files:\n- content: |\n    {KEY}".encode()).decode(),
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_tokens="required", http_put_response_hop_limit=1),
        block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name="/dev/sda1", ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(encrypted="true"))],
    )
    key = tls.PrivateKey("ca-key", algorithm="ECDSA")
    tls.SelfSignedCert("ca", private_key_pem=key.private_key_pem, is_ca_certificate=True, validity_period_hours=1,
                       allowed_uses=["cert_signing"], subject=tls.SelfSignedCertSubjectArgs(common_name="ca"))
    pulumi.export("adminKubeconfig", KUBECONFIG)
    pulumi.export("safeKubeconfig", pulumi.Output.secret(KUBECONFIG))


def test_policies_over_a_recorded_program() -> None:
    run = run_program(program, {}, stack="offline-test", region="eu-north-1")
    prod = facts(environment="prod", production=True, controlPlane={"count": 3}, network={"azCount": 3},
                 backup={"region": "us-west-2"}, protection={"protect": True, "retainOnDelete": True})
    result = evaluate(from_records(run.resources, run.outputs, "offline-test"), prod)
    seen = {(f.policy, f.urn.rsplit("::", 1)[-1]) for f in result.mandatory}
    assert seen == {
        ("no-world-ingress", "web"),
        ("no-plaintext-secrets", "leaky"),  # the Output.secret one ("careful") passes
        ("no-plaintext-secrets", "nodes"),  # decoded launch-template user-data
        ("user-data-without-secrets", "nodes"),
        ("no-plaintext-secrets", "ck8s-gpu-offline-test"),  # the plain stack output only
        ("prod-protects-dr-state", "ca"),
        ("prod-protects-dr-state", "ca-key"),  # found through the CA cert's dependency on it
        ("smoke-test-required", ""),
        ("smoke-test-isolated", ""),
    }
    stack_output = next(f for f in result.mandatory if f.urn.endswith("ck8s-gpu-offline-test"))
    assert "adminKubeconfig" in stack_output.message
    assert result.not_applicable == ()  # offline, every policy can judge
