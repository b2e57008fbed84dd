"""NodeImage: an EC2 Image Builder pipeline for one node image line, gpu-node or control-plane (thin shell).

Everything it decides comes from components/images/plan.py and document.py; this registers it:
build role, component, recipe, infrastructure, distribution (AMI + SSM parameter in every
region), the pipeline (weekly or manual), with `keepImages` the lifecycle policy that deletes the
line's older AMIs and their snapshots (docs/adr/0057) and, with `buildOnUp`, the first image, so
`pulumi up` returns once every region's parameter names an image.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from ..tables import tokens
from .plan import (
    ALL_VERSIONS,
    BUILD_INSTANCE_POLICIES,
    FIRST_BUILD_TAG,
    LAST_LAUNCHED_MAX,
    LIFECYCLE_POLICY_ARN,
    TAG,
    WEEKLY,
    image_plan,
)
from .settings import ImageSettings

IMAGE_BUILD_TIMEOUT = "120m"  # a build + test of this recipe, with room (pulumi-aws's default is 60m)


class NodeImage(pulumi.ComponentResource):
    def __init__(self, name: str, settings: ImageSettings, opts: pulumi.ResourceOptions | None = None) -> None:
        # The type gpu-node stacks were created with: an alias, so renaming it replaces nothing.
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            aliases=[pulumi.Alias(type_=tokens.GPU_NODE_IMAGE)]))
        super().__init__(tokens.NODE_IMAGE, name, None, opts)
        plan = image_plan(settings)
        tags = {**settings.tags, TAG: plan.base}
        provider = aws.Provider(f"{name}-aws", region=settings.region,
                                default_tags=aws.ProviderDefaultTagsArgs(tags=tags),
                                opts=pulumi.ResourceOptions(parent=self))
        on_aws = pulumi.ResourceOptions(parent=self, provider=provider)

        role = aws.iam.Role(
            f"{name}-build-role", name=plan.role, opts=on_aws,
            assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
        attachments = [
            aws.iam.RolePolicyAttachment(f"{name}-build-{arn.rsplit('/', 1)[1]}", role=role.name, policy_arn=arn,
                                         opts=on_aws)
            for arn in BUILD_INSTANCE_POLICIES
        ]
        profile = aws.iam.InstanceProfile(f"{name}-build-profile", name=plan.role, role=role.name, opts=on_aws)

        components = [
            aws.imagebuilder.Component(
                f"{name}-component{c.key}", name=c.name, version=c.version, platform="Linux",
                data=c.document, opts=on_aws, description=c.description)
            for c in plan.components
        ]
        recipe = aws.imagebuilder.ImageRecipe(
            f"{name}-recipe", name=plan.base, version=plan.recipe_version, parent_image=plan.parent_image,
            components=[aws.imagebuilder.ImageRecipeComponentArgs(component_arn=c.arn) for c in components],
            block_device_mappings=[aws.imagebuilder.ImageRecipeBlockDeviceMappingArgs(
                device_name="/dev/sda1",  # Canonical's AMIs boot from /dev/sda1
                ebs=aws.imagebuilder.ImageRecipeBlockDeviceMappingEbsArgs(
                    volume_size=plan.root_volume_gib, volume_type="gp3", encrypted=True,
                    delete_on_termination=True))],
            opts=on_aws)
        infrastructure = aws.imagebuilder.InfrastructureConfiguration(
            f"{name}-infrastructure", name=plan.base, instance_profile_name=profile.name,
            instance_types=[plan.build_instance_type], terminate_instance_on_failure=True,
            subnet_id=settings.subnet_id, security_group_ids=list(settings.security_group_ids) or None,
            instance_metadata_options=aws.imagebuilder.InfrastructureConfigurationInstanceMetadataOptionsArgs(
                http_tokens="required", http_put_response_hop_limit=1),
            opts=pulumi.ResourceOptions.merge(on_aws, pulumi.ResourceOptions(depends_on=attachments)))
        distribution = aws.imagebuilder.DistributionConfiguration(
            f"{name}-distribution", name=plan.base, opts=on_aws,
            distributions=[aws.imagebuilder.DistributionConfigurationDistributionArgs(
                region=region,
                ami_distribution_configuration=(
                    aws.imagebuilder.DistributionConfigurationDistributionAmiDistributionConfigurationArgs(
                        name=plan.ami_name, ami_tags={**tags, **plan.ami_tags})),
                ssm_parameter_configurations=[
                    aws.imagebuilder.DistributionConfigurationDistributionSsmParameterConfigurationArgs(
                        parameter_name=plan.parameter, data_type="aws:ec2:image")],
            ) for region in plan.regions])
        tests = aws.imagebuilder.ImagePipelineImageTestsConfigurationArgs(image_tests_enabled=True,
                                                                            timeout_minutes=60)
        self.pipeline = aws.imagebuilder.ImagePipeline(
            f"{name}-pipeline", name=plan.base, image_recipe_arn=recipe.arn,
            infrastructure_configuration_arn=infrastructure.arn,
            distribution_configuration_arn=distribution.arn, image_tests_configuration=tests,
            schedule=aws.imagebuilder.ImagePipelineScheduleArgs(
                schedule_expression=WEEKLY, pipeline_execution_start_condition="EXPRESSION_MATCH_ONLY")
            if settings.rebuild == "weekly" else None,
            opts=on_aws)
        if plan.keep_images is not None:
            self._lifecycle(name, plan.base, plan.lifecycle_role, plan.keep_images, on_aws)
        self.parameter = plan.parameter
        self.amis: pulumi.Output[list[dict[str, str]]] = pulumi.Output.from_input([])
        if settings.build_on_up:
            image = aws.imagebuilder.Image(
                f"{name}-first-build", image_recipe_arn=recipe.arn,
                infrastructure_configuration_arn=infrastructure.arn,
                distribution_configuration_arn=distribution.arn,
                image_tests_configuration=aws.imagebuilder.ImageImageTestsConfigurationArgs(
                    image_tests_enabled=True, timeout_minutes=60),
                tags=FIRST_BUILD_TAG,
                opts=pulumi.ResourceOptions.merge(on_aws, pulumi.ResourceOptions(
                    custom_timeouts=pulumi.CustomTimeouts(create=IMAGE_BUILD_TIMEOUT))))
            self.amis = image.output_resources.apply(
                lambda res: [{"region": a.region or "", "image": a.image or ""}
                             for r in (res or []) for a in (r.amis or [])])
        self.register_outputs({"parameter": self.parameter, "pipeline": self.pipeline.arn, "amis": self.amis})

    def _lifecycle(self, name: str, base: str, role_name: str, keep: int, on_aws: pulumi.ResourceOptions) -> None:
        """Keep the line's newest `keep` AMIs; delete older ones with their snapshots in every region
        (Image Builder lifecycle policy, AMI_IMAGE). Never one an instance launched from within `keep`
        weeks, nor the first build's (FIRST_BUILD_TAG): docs/adr/0057."""
        role = aws.iam.Role(
            f"{name}-lifecycle-role", name=role_name, opts=on_aws,
            assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "imagebuilder.amazonaws.com"},
                "Action": "sts:AssumeRole"}]}))
        attachment = aws.iam.RolePolicyAttachment(f"{name}-lifecycle-execution", role=role.name,
                                                  policy_arn=LIFECYCLE_POLICY_ARN, opts=on_aws)
        ib = aws.imagebuilder
        self.lifecycle = ib.LifecyclePolicy(
            f"{name}-lifecycle", name=base, resource_type="AMI_IMAGE", execution_role=role.arn,
            description=f"keep the newest {keep} AMIs of {base}",
            resource_selection=ib.LifecyclePolicyResourceSelectionArgs(recipes=[
                ib.LifecyclePolicyResourceSelectionRecipeArgs(name=base, semantic_version=ALL_VERSIONS)]),
            policy_details=[ib.LifecyclePolicyPolicyDetailArgs(
                action=ib.LifecyclePolicyPolicyDetailActionArgs(type="DELETE", include_resources=(
                    ib.LifecyclePolicyPolicyDetailActionIncludeResourcesArgs(amis=True, snapshots=True))),
                filter=ib.LifecyclePolicyPolicyDetailFilterArgs(type="COUNT", value=keep),
                exclusion_rules=ib.LifecyclePolicyPolicyDetailExclusionRulesArgs(
                    tag_map=FIRST_BUILD_TAG,
                    amis=ib.LifecyclePolicyPolicyDetailExclusionRulesAmisArgs(
                        last_launched=ib.LifecyclePolicyPolicyDetailExclusionRulesAmisLastLaunchedArgs(
                            unit="WEEKS", value=min(keep, LAST_LAUNCHED_MAX)))))],
            opts=pulumi.ResourceOptions.merge(on_aws, pulumi.ResourceOptions(depends_on=[attachment])))
