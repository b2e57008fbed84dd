"""ck8s-gpu images program: load settings, wire NodeImage, export. Nothing else lives here."""

import pulumi

from components.images.component import NodeImage
from components.images.settings import load_image_settings

settings = load_image_settings()  # validated before any resource exists; bad input ends here cleanly
image = NodeImage(f"{settings.role}-image", settings)  # gpu-node-image: the name gpu-node stacks have

pulumi.export("parameter", image.parameter)  # what pools name as nodePools[].ami
pulumi.export("regions", list(settings.regions))
pulumi.export("pipeline", image.pipeline.arn)
pulumi.export("amis", image.amis)
pulumi.export("role", settings.role)
